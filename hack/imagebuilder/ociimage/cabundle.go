package ociimage

import (
	"bytes"
	"encoding/pem"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// CABundle returns Mozilla's NSS root certificates, as golang.org/x/crypto/x509roots/fallback
// ships them, in PEM: pinned in go.mod, so the same on every machine that builds the image
// (a machine's /etc/ssl/certs differs with its distribution and update level). Roots that
// NSS trusts only for certificates issued before a date are left out: a PEM file cannot
// carry that constraint, and trusting them unconditionally would be wider than NSS does.
func CABundle() []byte {
	var out bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		// Encoding into a bytes.Buffer cannot fail.
		_ = pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate})
	}
	return out.Bytes()
}
