package process_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// scrape GETs https://addr/metrics with token ("" for none), trusting the manager's
// self-signed certificate, and returns the status code and body.
func scrape(addr, token string) (int, string, error) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the manager's certificate is self-signed
	}}
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://%s/metrics", addr), nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

var _ = Describe("the manager's metrics with --metrics-secure, as the chart runs it by default", func() {
	It("refuse a scrape without a token and one by a ServiceAccount not bound to the chart's metrics-reader role, and answer one that is", func(ctx context.Context) {
		const namespace = "monitoring"
		k8s := apiServer.Client
		cs, err := kubernetes.NewForConfig(apiServer.Config)
		Expect(err).NotTo(HaveOccurred())

		// The chart's reader role, bound to Prometheus' ServiceAccount; a second one is not.
		objs, err := framework.RenderChart(framework.ChartNamespace, nil)
		Expect(err).NotTo(HaveOccurred())
		var reader *rbacv1.ClusterRole
		for _, o := range objs {
			if o.GetKind() == "ClusterRole" && o.GetName() == framework.ChartName+"-metrics-reader" {
				Expect(k8s.Create(ctx, o)).To(Succeed())
				reader = &rbacv1.ClusterRole{}
				Expect(k8s.Get(ctx, client.ObjectKey{Name: o.GetName()}, reader)).To(Succeed())
			}
		}
		Expect(reader).NotTo(BeNil(), "the chart renders the metrics-reader ClusterRole by default")
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
		token := map[string]string{}
		for _, sa := range []string{"prometheus", "stranger"} {
			Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: sa}})).To(Succeed())
			tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			token[sa] = tr.Status.Token
		}
		Expect(k8s.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "prometheus-reads-argocd-pull-metrics"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: "prometheus"}},
		})).To(Succeed())

		ports, err := framework.FreePorts(2)
		Expect(err).NotTo(HaveOccurred())
		metrics := framework.LoopbackAddress(ports[0])
		cmd := exec.Command(binary, "manager", "--kubeconfig", kubeconfig, "--metrics-bind-address", metrics, "--metrics-secure",
			"--health-probe-bind-address", framework.LoopbackAddress(ports[1]))
		cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
		Expect(cmd.Start()).To(Succeed())
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		DeferCleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			Eventually(exited).WithTimeout(30 * time.Second).Should(Receive())
		})

		By("answering Prometheus' ServiceAccount")
		Eventually(func() (string, error) {
			code, body, err := scrape(metrics, token["prometheus"])
			if err == nil && code != http.StatusOK {
				err = fmt.Errorf("status %d: %s", code, body)
			}
			return body, err
		}).WithTimeout(30 * time.Second).Should(MatchRegexp(`rest_client_requests_total\{code="200"`))
		_, body, err := scrape(metrics, token["prometheus"])
		Expect(err).NotTo(HaveOccurred())
		Expect(body).To(MatchRegexp(`(?m)^argocd_pull_build_info\{commit="[^"]+",go_version="go[^"]+",version="[^"]+"\} 1$`))

		By("refusing a scrape without a token")
		code, body, err := scrape(metrics, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(code).To(Equal(http.StatusUnauthorized), body)

		By("refusing a token the API server does not know")
		code, body, err = scrape(metrics, "not-a-token")
		Expect(err).NotTo(HaveOccurred())
		// controller-runtime's filter answers a token the TokenReview rejects with 500
		// "Authentication failed", not 401.
		Expect(code).To(Equal(http.StatusInternalServerError), body)
		Expect(body).To(ContainSubstring("Authentication failed"))

		By("refusing a ServiceAccount without the reader role")
		code, body, err = scrape(metrics, token["stranger"])
		Expect(err).NotTo(HaveOccurred())
		Expect(code).To(Equal(http.StatusForbidden), body)
		Expect(body).NotTo(ContainSubstring("rest_client_requests_total"))

		By("not serving plain HTTP")
		code, _, err = get(metrics, "/metrics")
		Expect(err).NotTo(HaveOccurred())
		Expect(code).To(Equal(http.StatusBadRequest), "Go's TLS server answers plain HTTP with 400")
	})
})
