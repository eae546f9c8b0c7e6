package fleet

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// controlPlaneCA is an envtest Authn that, unlike envtest's own CertAuthn (which keeps its
// CA key in memory), writes the client CA's key next to its certificate. A CSR signer
// needs that key: certificates it issues for approved CSRs must chain to the CA the API
// server trusts for client certificates (--client-ca-file), or the hub rejects the
// klusterlet's and the addon agents' credentials.
type controlPlaneCA struct {
	cert    *x509.Certificate
	certPEM []byte
	key     crypto.Signer
	keyPEM  []byte
	dir     string
}

var _ envtest.Authn = (*controlPlaneCA)(nil)

func newControlPlaneCA(name string) (*controlPlaneCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the %s client CA key: %w", name, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(now.UnixNano()),
		Subject:               pkix.Name{CommonName: name + "-client-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("self-signing the %s client CA: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing the %s client CA: %w", name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding the %s client CA key: %w", name, err)
	}
	return &controlPlaneCA{
		cert:    cert,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:     key,
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// CertFile and KeyFile are the client CA on disk, valid once the API server has started.
func (c *controlPlaneCA) CertFile() string { return filepath.Join(c.dir, "client-ca.crt") }
func (c *controlPlaneCA) KeyFile() string  { return filepath.Join(c.dir, "client-ca.key") }

// Configure points the API server at the CA file Start writes.
func (c *controlPlaneCA) Configure(workDir string, args *envtest.Arguments) error {
	c.dir = workDir
	args.Set("client-ca-file", c.CertFile())
	return nil
}

// Start writes the CA certificate and key into the API server's certificate directory,
// which envtest removes on Stop.
func (c *controlPlaneCA) Start() error {
	if c.dir == "" {
		return errors.New("client CA started before it was configured")
	}
	if err := os.WriteFile(c.CertFile(), c.certPEM, 0o600); err != nil {
		return fmt.Errorf("writing the client CA certificate: %w", err)
	}
	if err := os.WriteFile(c.KeyFile(), c.keyPEM, 0o600); err != nil {
		return fmt.Errorf("writing the client CA key: %w", err)
	}
	return nil
}

// AddUser returns baseCfg authenticating with a client certificate for user; envtest
// calls it for its admin user, the harness for kube-controller-manager.
func (c *controlPlaneCA) AddUser(user envtest.User, baseCfg *rest.Config) (*rest.Config, error) {
	certPEM, keyPEM, err := c.signClientCert(user.Name, user.Groups)
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(baseCfg)
	cfg.CertData, cfg.KeyData = certPEM, keyPEM
	return cfg, nil
}

// Stop does nothing: the files live in envtest's certificate directory.
func (c *controlPlaneCA) Stop() error { return nil }

func (c *controlPlaneCA) signClientCert(name string, groups []string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating a key for %s: %w", name, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()),
		Subject:      pkix.Name{CommonName: name, Organization: groups},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, key.Public(), c.key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing a client certificate for %s: %w", name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the key for %s: %w", name, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}
