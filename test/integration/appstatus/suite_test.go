package appstatus_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/appstatus"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

var (
	apiServer *framework.APIServer
	scheme    *runtime.Scheme
	k8s       client.Client
	writes    = &writeCounter{byApp: map[string]int{}}
	stopMgr   context.CancelFunc
	mgrDone   chan error
)

func TestAppStatus(t *testing.T) {
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(3 * time.Second)
	SetDefaultConsistentlyPollingInterval(100 * time.Millisecond)
	RegisterFailHandler(Fail)
	RunSpecs(t, "Application status controller on a real kube-apiserver")
}

var _ = BeforeSuite(func() {
	ctrl.SetLogger(GinkgoLogr)

	var err error
	apiServer, err = framework.StartAPIServer()
	Expect(err).NotTo(HaveOccurred())
	scheme, k8s = apiServer.Scheme, apiServer.Client

	// The manager talks to the API server through a transport that counts its writes to
	// Applications, so tests can prove that unchanged feedback causes none.
	cfg := rest.CopyConfig(apiServer.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return &countingTransport{next: rt, counter: writes}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(appstatus.NewReconciler(mgr.GetClient(), mgr.GetAPIReader()).SetupWithManager(mgr)).To(Succeed())

	var ctx context.Context
	ctx, stopMgr = context.WithCancel(context.Background())
	mgrDone = make(chan error, 1)
	go func() {
		defer GinkgoRecover()
		mgrDone <- mgr.Start(ctx)
	}()
	Expect(mgr.GetCache().WaitForCacheSync(ctx)).To(BeTrue())
})

var _ = AfterSuite(func() {
	if stopMgr != nil {
		stopMgr()
		Eventually(mgrDone).Should(Receive(Not(HaveOccurred())))
	}
	Expect(apiServer.Stop()).To(Succeed())
})

// writeCounter counts create, update and patch requests to Applications, by Application name.
type writeCounter struct {
	mu    sync.Mutex
	byApp map[string]int
}

func (c *writeCounter) add(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byApp[name]++
}

// of returns how many writes the manager sent for the Application name.
func (c *writeCounter) of(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byApp[name]
}

type countingTransport struct {
	next    http.RoundTripper
	counter *writeCounter
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		// /apis/argoproj.io/v1alpha1/namespaces/<ns>/applications[/<name>[/<subresource>]]
		parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
		if len(parts) >= 6 && parts[1] == "argoproj.io" && parts[5] == "applications" {
			name := ""
			if len(parts) >= 7 {
				name = parts[6]
			}
			t.counter.add(name)
		}
	}
	return t.next.RoundTrip(req)
}
