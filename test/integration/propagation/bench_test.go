package propagation_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pullmodel "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/manager"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/propagation"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// BenchmarkBurst creates BENCH_APPS (5,000) marked Applications over BENCH_CLUSTERS (500)
// clusters in one burst on a real API server and prints the time until every
// ManifestWork exists, with per-Application p50/p99. It prints figures and asserts
// nothing about time. BENCH_QPS/BENCH_BURST override the manager's client limits, BENCH_APISERVER_CPUPROFILE=<file>
// profiles the API server during the burst. BENCH_WATCHES_SHARE_CONNECTION=1 runs the
// manager's watches on the connection of its writes (the binary before it gave them one
// of their own, manager.WithOwnWatchConnection); BENCH_LOADER_SHARES_CONNECTION=1 runs
// the load generator on the manager's connection too (this benchmark before the same
// change). Run it alone:
//
//	KUBEBUILDER_ASSETS=$PWD/bin/envtest go test ./test/integration/propagation/ -run '^$' -bench Burst -benchtime 1x
//
// The manager runs in the test process, so its CPU seconds and peak RSS include the
// load generator's.
func BenchmarkBurst(b *testing.B) {
	apps, clusters := envInt("BENCH_APPS", 5000), envInt("BENCH_CLUSTERS", 500)
	ctrl.SetLogger(logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	s, err := framework.Scheme()
	must(b, err)
	server, err := framework.StartAPIServer()
	must(b, err)
	defer func() { _ = server.Stop() }()
	fast := rest.CopyConfig(server.Config)
	fast.QPS, fast.Burst = 2000, 4000
	if os.Getenv("BENCH_LOADER_SHARES_CONNECTION") == "" {
		// The Applications come from another process in a hub (the ApplicationSet
		// controller), on a connection of its own: not on the one client-go's transport
		// cache would have this process's clients share with the manager's.
		fast = manager.OwnConnection(fast)
	}
	c, err := client.New(fast, client.Options{Scheme: s})
	must(b, err)

	must(b, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: appNamespace}}))
	must(b, framework.AllowEveryDelivery(ctx, c, appNamespace))
	must(b, framework.Parallel(ctx, clusters, 16, func(i int) error {
		name := fmt.Sprintf("bench%d", i)
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			return err
		}
		return c.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}})
	}))

	// The manager's client limits are the binary's defaults (--kube-api-qps/--kube-api-burst),
	// unless BENCH_QPS and BENCH_BURST say otherwise.
	mgrCfg := rest.CopyConfig(server.Config)
	defaults := manager.NewOptions().Endpoints
	mgrCfg.QPS, mgrCfg.Burst = float32(envInt("BENCH_QPS", int(defaults.QPS))), envInt("BENCH_BURST", defaults.Burst)
	// The controller as the binary wires it, with its own number of workers.
	var managerOpts []framework.ManagerOption
	if os.Getenv("BENCH_WATCHES_SHARE_CONNECTION") != "" {
		shared, err := rest.HTTPClientFor(mgrCfg)
		must(b, err)
		managerOpts = append(managerOpts, func(o *ctrl.Options) { o.Cache.HTTPClient = shared })
	}
	stopManager, err := framework.RunManager(mgrCfg, s, func(mgr ctrl.Manager) error {
		return framework.SetupHubControllers(mgr, propagation.ControllerName)
	}, managerOpts...)
	must(b, err)
	defer func() { _ = stopManager() }()

	// Watch ManifestWorks through an informer of its own (it re-lists and re-watches
	// on its own) and note when each hub Application's first appears.
	watcher, err := cache.New(fast, cache.Options{Scheme: s})
	must(b, err)
	inf, err := watcher.GetInformer(ctx, &workv1.ManifestWork{})
	must(b, err)
	var mu sync.Mutex
	seen := map[string]time.Time{}
	createdAt := map[string]time.Time{} // the ManifestWorks' server-side creation times
	allSeen := make(chan struct{})
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		mw, ok := obj.(*workv1.ManifestWork)
		if !ok {
			return
		}
		app := mw.Annotations[pullmodel.AnnotationHubApplicationName]
		mu.Lock()
		defer mu.Unlock()
		if _, dup := seen[app]; !dup {
			seen[app] = time.Now()
			createdAt[app] = mw.CreationTimestamp.Time
			if len(seen) == apps+1 {
				close(allSeen)
			}
		}
	}})
	must(b, err)
	// The same for the Applications: how late their watch events come.
	appSeen := map[string]time.Time{}
	appInf, err := watcher.GetInformer(ctx, &argov1alpha1.Application{})
	must(b, err)
	_, err = appInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if app, ok := obj.(*argov1alpha1.Application); ok {
			mu.Lock()
			defer mu.Unlock()
			appSeen[app.Name] = time.Now()
		}
	}})
	must(b, err)
	go func() { _ = watcher.Start(ctx) }()
	if !watcher.WaitForCacheSync(ctx) {
		b.Fatal("ManifestWork informer did not sync")
	}

	// Warm up: the first write of each CRD type is slow.
	newBenchApp := func(name, cluster string) *argov1alpha1.Application { return hubApp(name).Cluster(cluster).Build() }
	must(b, c.Create(ctx, newBenchApp("warmup", "bench0")))
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		_, ok := seen["warmup"]
		mu.Unlock()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("warm-up Application got no ManifestWork within a minute")
		}
	}

	stopProfile := profileAPIServer(b, server.Config, os.Getenv("BENCH_APISERVER_CPUPROFILE"))
	closed0 := closedWatchers(b, server.Config)
	// The API server and etcd are child processes: find them by the ports they serve.
	apiserverPID, etcdPID := server.PIDs()
	apiserverCPU0, etcdCPU0 := framework.ProcessCPUSeconds(apiserverPID), framework.ProcessCPUSeconds(etcdPID)
	cpu0 := framework.ProcessCPUSeconds(os.Getpid())
	created := make([]time.Time, apps)
	b.ResetTimer()
	start := time.Now()
	must(b, framework.Parallel(ctx, apps, 32, func(i int) error {
		created[i] = time.Now()
		return c.Create(ctx, newBenchApp(fmt.Sprintf("app-%d", i), fmt.Sprintf("bench%d", i%clusters)))
	}))
	burst := time.Since(start)
	select {
	case <-allSeen:
	case <-time.After(10 * time.Minute):
		b.Fatalf("not every Application got a ManifestWork within 10 minutes")
	}
	b.StopTimer()
	stopProfile()
	closed := closedWatchers(b, server.Config) - closed0
	if os.Getenv("BENCH_TMP_METRICS") != "" {
		hc, _ := rest.HTTPClientFor(server.Config)
		resp, err := hc.Get(strings.TrimSuffix(server.Config.Host, "/") + "/metrics")
		if err == nil {
			data, _ := io.ReadAll(resp.Body)
			_ = os.WriteFile(os.Getenv("BENCH_TMP_METRICS"), data, 0o644)
		}
	}

	mu.Lock()
	var last time.Time
	lat := make([]time.Duration, 0, apps)
	var watchLag, appLag []time.Duration
	for i := 0; i < apps; i++ {
		name := fmt.Sprintf("app-%d", i)
		t := seen[name]
		if t.After(last) {
			last = t
		}
		lat = append(lat, t.Sub(created[i]))
		watchLag = append(watchLag, t.Sub(createdAt[name]))
		appLag = append(appLag, appSeen[name].Sub(created[i]))
	}
	sort.Slice(watchLag, func(i, j int) bool { return watchLag[i] < watchLag[j] })
	sort.Slice(appLag, func(i, j int) bool { return appLag[i] < appLag[j] })
	mu.Unlock()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	total := last.Sub(start)
	fmt.Printf("propagation burst: %d Applications over %d clusters, client %.0f QPS / %d burst\n",
		apps, clusters, mgrCfg.QPS, mgrCfg.Burst)
	fmt.Printf("  creating the Applications: %v\n", burst.Round(time.Millisecond))
	fmt.Printf("  until every ManifestWork exists: %v (%.0f Applications/s)\n", total.Round(time.Millisecond), float64(apps)/total.Seconds())
	fmt.Printf("  per Application, create to ManifestWork: p50 %v, p99 %v, max %v\n",
		lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*99/100].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	fmt.Printf("  of which ManifestWork created to seen through a watch (1 s resolution): p50 %v, p99 %v\n",
		watchLag[len(watchLag)/2].Round(time.Millisecond), watchLag[len(watchLag)*99/100].Round(time.Millisecond))
	fmt.Printf("  Application create to seen through a watch: p50 %v, p99 %v\n",
		appLag[len(appLag)/2].Round(time.Millisecond), appLag[len(appLag)*99/100].Round(time.Millisecond))
	fmt.Printf("  watches of Applications and ManifestWorks the API server closed for not keeping up: %.0f\n", closed)
	fmt.Printf("  test process (manager + load generator): CPU %.1fs during the burst, peak RSS %s\n", framework.ProcessCPUSeconds(os.Getpid())-cpu0, peakRSS())
	fmt.Printf("  kube-apiserver CPU %.1fs, etcd CPU %.1fs during the burst\n",
		framework.ProcessCPUSeconds(apiserverPID)-apiserverCPU0, framework.ProcessCPUSeconds(etcdPID)-etcdCPU0)
	b.ReportMetric(total.Seconds(), "s-total")
	b.ReportMetric(lat[len(lat)/2].Seconds(), "s-p50")
	b.ReportMetric(lat[len(lat)*99/100].Seconds(), "s-p99")
}

// profileAPIServer starts a CPU profile of the API server (its /debug/pprof, served to
// the admin) and returns a function that waits for it and writes it to path; with an
// empty path it does nothing. BENCH_APISERVER_PROFILE_SECONDS sets its length (30). `go tool pprof -top kube-apiserver path` reads it.
func profileAPIServer(b *testing.B, cfg *rest.Config, path string) func() {
	if path == "" {
		return func() {}
	}
	hc, err := rest.HTTPClientFor(cfg)
	must(b, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := hc.Get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimSuffix(cfg.Host, "/"), envInt("BENCH_APISERVER_PROFILE_SECONDS", 30)))
		if err != nil {
			b.Logf("profiling the API server: %v", err)
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err == nil {
			err = os.WriteFile(path, data, 0o644)
		}
		if err != nil {
			b.Logf("writing the API server profile: %v", err)
		}
	}()
	return func() { <-done }
}

// closedWatchers is how many watches of Applications and ManifestWorks the API server has
// closed because their client did not take the events in time
// (apiserver_terminated_watchers_total): each is watched again and sent, copied from the
// watch cache, every event it missed.
func closedWatchers(b *testing.B, cfg *rest.Config) float64 {
	b.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	must(b, err)
	resp, err := hc.Get(strings.TrimSuffix(cfg.Host, "/") + "/metrics")
	must(b, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	must(b, err)
	var n float64
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "apiserver_terminated_watchers_total{") ||
			!strings.Contains(line, `resource="applications"`) && !strings.Contains(line, `resource="manifestworks"`) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		must(b, err)
		n += v
	}
	return n
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func peakRSS() string {
	n, err := framework.ProcessPeakRSS(os.Getpid())
	if err != nil {
		return "unknown"
	}
	return framework.FormatBytes(n)
}
