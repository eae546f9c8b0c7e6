package report

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxReportNameLength is Kubernetes' limit on an object name (a DNS subdomain).
const maxReportNameLength = 253

// nameHashLength is how many hex characters of the SHA-256 a shortened name keeps.
const nameHashLength = 16

// ReportName is the name of the ApplicationStatusReport of the Application
// namespace/name on the managed cluster: "<namespace>.<name>". A namespace holds no dot,
// so two Applications never share a name. A name longer than an object name may be
// keeps a prefix and ends with a hash of the full "<namespace>.<name>".
func ReportName(namespace, name string) string {
	full := namespace + "." + name
	if len(full) <= maxReportNameLength {
		return full
	}
	sum := sha256.Sum256([]byte(full))
	prefix := full[:maxReportNameLength-1-nameHashLength]
	// Each dot-separated part of a DNS subdomain ends with an alphanumeric character.
	prefix = strings.TrimRight(prefix, ".-")
	return prefix + "-" + hex.EncodeToString(sum[:])[:nameHashLength]
}
