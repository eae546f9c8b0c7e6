package process_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// serviceName is the name the chart's metrics Service gives the manager, which its
// serving certificate is for and a ServiceMonitor's tlsConfig.serverName names.
const serviceName = "argocd-pull-integration-manager-metrics.argocd.svc"

// writeServingCertificate writes tls.crt and tls.key for serviceName into dir, signed by
// a CA of its own, and returns that CA's certificates, as cert-manager or OpenShift's
// service CA would hand them to Prometheus.
func writeServingCertificate(dir string) *x509.CertPool {
	GinkgoHelper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	caTemplate := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "metrics-ca"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	Expect(err).NotTo(HaveOccurred())
	ca, err := x509.ParseCertificate(caDER)
	Expect(err).NotTo(HaveOccurred())

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(2),
		Subject: pkix.Name{CommonName: serviceName}, DNSNames: []string{serviceName},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}},
		ca, &key.PublicKey, caKey)
	Expect(err).NotTo(HaveOccurred())
	keyDER, err := x509.MarshalECPrivateKey(key)
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)).To(Succeed())
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool
}

var _ = Describe("the manager's secure metrics with --metrics-cert-dir, as the chart runs it with metrics.servingCertificate", func() {
	It("serve the certificate of that directory, which a scraper verifies with its CA and the Service's name", func() {
		dir := GinkgoT().TempDir()
		roots := writeServingCertificate(dir)
		ports, err := framework.FreePorts(2)
		Expect(err).NotTo(HaveOccurred())
		metrics := framework.LoopbackAddress(ports[0])
		cmd := exec.Command(binary, "manager", "--kubeconfig", kubeconfig, "--metrics-bind-address", metrics, "--metrics-secure",
			"--metrics-cert-dir", dir, "--health-probe-bind-address", framework.LoopbackAddress(ports[1]))
		cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
		Expect(cmd.Start()).To(Succeed())
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		DeferCleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			Eventually(exited).WithTimeout(30 * time.Second).Should(Receive())
		})

		get := func(serverName string) (int, error) {
			c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
				TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12}}}
			resp, err := c.Get(fmt.Sprintf("https://%s/metrics", metrics))
			if err != nil {
				return 0, err
			}
			_ = resp.Body.Close()
			return resp.StatusCode, nil
		}
		By("the handshake verifies against the CA for the Service's name (the request then wants a token)")
		Eventually(func() (int, error) { return get(serviceName) }).WithTimeout(30 * time.Second).Should(Equal(http.StatusUnauthorized))

		By("and fails for any other name, so the check can fail")
		_, err = get("elsewhere.example.com")
		Expect(err).To(MatchError(ContainSubstring("certificate is valid for " + serviceName)))
	})
})
