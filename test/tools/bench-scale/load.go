package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/manager"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/reports"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// simApp is one pulled Application as its managed cluster sees it: the ManifestWork's
// payload with the status the cluster's Argo CD would give it.
type simApp struct {
	// inFlight is set while a churn change of the Application is under way.
	inFlight atomic.Bool
	mu       sync.Mutex
	appSet   string
	cluster  string
	hubName  string
	work     types.NamespacedName
	gen      int64
	app      *argov1alpha1.Application
	// trees: each change also sends the Application's resource tree (--trees).
	trees bool
}

// pending is a spoke change not yet seen in its ApplicationSet's report.
type pending struct {
	revision string
	health   health.HealthStatusCode
	at       time.Time
}

// tracker watches the hub as a client would: ManifestWorks appearing, and the
// MulticlusterApplicationSetReports reflecting spoke changes.
type tracker struct {
	mu        sync.Mutex
	works     map[string]*workv1.ManifestWork // by hub Application name
	workSeen  map[string]time.Time
	wantWorks int
	allWorks  chan struct{}

	pending   map[string]pending // by "<appset>/<cluster>"
	latencies []time.Duration
	// The same for the hub Application's mirrored status, by its name.
	appPending   map[string]pending
	appLatencies []time.Duration
	superseded   int
	reports      map[string]*appsv1alpha1.MulticlusterApplicationSetReport
}

func newTracker() *tracker {
	return &tracker{works: map[string]*workv1.ManifestWork{}, workSeen: map[string]time.Time{},
		pending: map[string]pending{}, appPending: map[string]pending{}, reports: map[string]*appsv1alpha1.MulticlusterApplicationSetReport{},
		allWorks: make(chan struct{})}
}

// start runs informers (with a client of their own) on the pull model's ManifestWorks and
// on the reports.
func (t *tracker) start(ctx context.Context, h *hub) error {
	cfg := rest.CopyConfig(h.adminCfg)
	if h.ownConnections {
		// As `kubectl get -w` in a terminal of its own: not behind the simulated
		// spokes' writes on their connection.
		cfg = manager.OwnConnection(cfg)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	c, err := cache.New(cfg, cache.Options{Scheme: h.server.Scheme, Mapper: h.mapper, HTTPClient: hc})
	if err != nil {
		return err
	}
	works, err := c.GetInformer(ctx, &workv1.ManifestWork{})
	if err != nil {
		return err
	}
	onWork := func(obj any) {
		mw, ok := obj.(*workv1.ManifestWork)
		if !ok || mw.Labels[apps.LabelPullToOCMManagedCluster] != "true" {
			return
		}
		name := mw.Annotations[apps.AnnotationHubApplicationName]
		t.mu.Lock()
		defer t.mu.Unlock()
		t.works[name] = mw
		if _, seen := t.workSeen[name]; !seen {
			t.workSeen[name] = time.Now()
			if t.wantWorks > 0 && len(t.workSeen) == t.wantWorks {
				close(t.allWorks)
			}
		}
	}
	if _, err := works.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: onWork, UpdateFunc: func(_, obj any) { onWork(obj) }}); err != nil {
		return err
	}
	reports, err := c.GetInformer(ctx, &appsv1alpha1.MulticlusterApplicationSetReport{})
	if err != nil {
		return err
	}
	if _, err := reports.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: t.onReport, UpdateFunc: func(_, obj any) { t.onReport(obj) }}); err != nil {
		return err
	}
	hubApps, err := c.GetInformer(ctx, &argov1alpha1.Application{})
	if err != nil {
		return err
	}
	if _, err := hubApps.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { t.onApplication(obj) }}); err != nil {
		return err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("the tracker's informers did not sync")
	}
	return nil
}

func (t *tracker) onReport(obj any) {
	r, ok := obj.(*appsv1alpha1.MulticlusterApplicationSetReport)
	if !ok {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reports[r.Name] = r
	if len(t.pending) == 0 {
		return
	}
	listed := make(map[string]bool, len(r.Statuses.ClusterConditions))
	for i := range r.Statuses.ClusterConditions {
		cc := &r.Statuses.ClusterConditions[i]
		listed[cc.Cluster] = true
		key := r.Name + "/" + cc.Cluster
		if p, ok := t.pending[key]; ok && cc.SyncRevision == p.revision && cc.HealthStatus == string(p.health) {
			t.latencies = append(t.latencies, now.Sub(p.at))
			delete(t.pending, key)
		}
	}
	// A report of a large fleet lists only the clusters that need attention: a change to
	// Healthy shows as the cluster's entry leaving the list.
	if tr := r.Statuses.Truncation; tr == nil || tr.UnlistedClusterConditions == 0 {
		return
	}
	for key, p := range t.pending {
		appSet, cluster, _ := strings.Cut(key, "/")
		if appSet == r.Name && p.health == health.HealthStatusHealthy && !listed[cluster] {
			t.latencies = append(t.latencies, now.Sub(p.at))
			delete(t.pending, key)
		}
	}
}

func (t *tracker) onApplication(obj any) {
	app, ok := obj.(*argov1alpha1.Application)
	if !ok {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.appPending[app.Name]; ok && app.Status.Sync.Revision == p.revision && app.Status.Health.Status == p.health {
		t.appLatencies = append(t.appLatencies, now.Sub(p.at))
		delete(t.appPending, app.Name)
	}
}

// expectWorks arms allWorks for n (more) ManifestWorks in total.
func (t *tracker) expectWorks(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.wantWorks = n
	t.allWorks = make(chan struct{})
	if len(t.workSeen) >= n {
		close(t.allWorks)
	}
}

func (t *tracker) work(hubName string) *workv1.ManifestWork {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.works[hubName]
}

// expectChange notes a spoke change that the report of appSet must show for cluster.
func (t *tracker) expectChange(appSet, cluster, hubName, revision string, h health.HealthStatusCode, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := pending{revision: revision, health: h, at: at}
	t.appPending[hubName] = p
	key := appSet + "/" + cluster
	if _, ok := t.pending[key]; ok {
		t.superseded++
	}
	t.pending[key] = p
}

// takeLatencies returns and clears the latencies measured so far: until the
// ApplicationSet's report, and until the hub Application's status.
func (t *tracker) takeLatencies() (reports, hubApps []time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	reports, hubApps = t.latencies, t.appLatencies
	t.latencies, t.appLatencies, t.superseded = nil, nil, 0
	return reports, hubApps
}

// waitSeen waits until every expected change is seen (in the reports and on the hub
// Applications) or timeout passes, and returns how many the reports did not show (and
// forgets them all).
func (t *tracker) waitSeen(ctx context.Context, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	for {
		t.mu.Lock()
		n := len(t.pending)
		if n+len(t.appPending) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			t.pending, t.appPending = map[string]pending{}, map[string]pending{}
			t.mu.Unlock()
			return n
		}
		t.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
}

// reportSizes returns the JSON size of every report the tracker saw last.
func (t *tracker) reportSizes() []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	var sizes []int
	for name, r := range t.reports {
		if name == "warmup" {
			continue
		}
		if data, err := json.Marshal(r); err == nil {
			sizes = append(sizes, len(data))
		}
	}
	return sizes
}

// newApplicationSet is an ApplicationSet with the pull-model template of
// examples/pull/04-applicationset-guestbook.yaml. No ApplicationSet controller runs: the
// benchmark renders its Applications itself.
func newApplicationSet(name string) *argov1alpha1.ApplicationSet {
	return &argov1alpha1.ApplicationSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: argoNamespace},
		Spec: argov1alpha1.ApplicationSetSpec{
			Generators: []argov1alpha1.ApplicationSetGenerator{{ClusterDecisionResource: &argov1alpha1.DuckTypeGenerator{
				ConfigMapRef: "ocm-placement-generator", RequeueAfterSeconds: ptr.To[int64](30),
				LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"cluster.open-cluster-management.io/placement": name + "-placement"}},
			}}},
			Template: argov1alpha1.ApplicationSetTemplate{
				ApplicationSetTemplateMeta: argov1alpha1.ApplicationSetTemplateMeta{
					Name:        "{{name}}-" + name,
					Labels:      map[string]string{apps.LabelPullToOCMManagedCluster: "true"},
					Annotations: map[string]string{apps.AnnotationSkipReconcile: "true", apps.AnnotationOCMManagedCluster: "{{name}}", apps.AnnotationOCMManagedClusterAppNamespace: argoNamespace},
				},
				Spec: guestbookSpec(),
			},
		},
	}
}

func guestbookSpec() argov1alpha1.ApplicationSpec {
	return argov1alpha1.ApplicationSpec{
		Project:     "default",
		Source:      &argov1alpha1.ApplicationSource{RepoURL: "https://github.com/argoproj/argocd-example-apps.git", TargetRevision: "HEAD", Path: "guestbook"},
		Destination: argov1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: "guestbook"},
		SyncPolicy:  &argov1alpha1.SyncPolicy{Automated: &argov1alpha1.SyncPolicyAutomated{Prune: true}, SyncOptions: argov1alpha1.SyncOptions{"CreateNamespace=true"}},
	}
}

// newApplication is the Application the ApplicationSet controller renders for cluster:
// owned by the ApplicationSet, marked for the pull model.
func newApplication(appSet *argov1alpha1.ApplicationSet, cluster string) *argov1alpha1.Application {
	return &argov1alpha1.Application{
		ObjectMeta: metav1.ObjectMeta{
			Name: cluster + "-" + appSet.Name, Namespace: argoNamespace,
			Labels:      map[string]string{apps.LabelPullToOCMManagedCluster: "true"},
			Annotations: map[string]string{apps.AnnotationSkipReconcile: "true", apps.AnnotationOCMManagedCluster: cluster, apps.AnnotationOCMManagedClusterAppNamespace: argoNamespace},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: argov1alpha1.SchemeGroupVersion.String(), Kind: "ApplicationSet",
				Name: appSet.Name, UID: appSet.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
			Finalizers: []string{"resources-finalizer.argocd.argoproj.io"},
		},
		Spec: guestbookSpec(),
	}
}

// newSimApp is the spoke's copy of the ManifestWork's Application, as the work agent
// creates it there.
func newSimApp(mw *workv1.ManifestWork, appSet, cluster string) (*simApp, error) {
	if len(mw.Spec.Workload.Manifests) == 0 {
		return nil, fmt.Errorf("ManifestWork %s/%s has no manifest", mw.Namespace, mw.Name)
	}
	app := &argov1alpha1.Application{}
	if err := json.Unmarshal(mw.Spec.Workload.Manifests[0].Raw, app); err != nil {
		return nil, fmt.Errorf("reading the Application in ManifestWork %s/%s: %w", mw.Namespace, mw.Name, err)
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(mw.UID))
	app.UID = types.UID(fmt.Sprintf("%016x-spoke", h.Sum64()))
	return &simApp{appSet: appSet, cluster: cluster, hubName: mw.Annotations[apps.AnnotationHubApplicationName],
		work: types.NamespacedName{Namespace: mw.Namespace, Name: mw.Name}, gen: mw.Generation, app: app}, nil
}

// synced gives the spoke Application the status Argo CD gives it after syncing revision:
// Healthy, or Progressing while its Deployment rolls out.
func (s *simApp) synced(revision string, h health.HealthStatusCode, at time.Time) {
	s.app.Status = framework.SyncedGuestbookStatus(revision, h, at)
}

// publish writes the agent's report of the spoke Application with the agent's own code,
// as the cluster's agent.
func (s *simApp) publish(ctx context.Context, h *hub) error {
	c, err := h.agentClient(s.cluster)
	if err != nil {
		return err
	}
	_, err = reports.PublishReport(ctx, c, s.app, s.cluster, h.addonOwner(s.cluster), time.Now())
	return err
}

// writeFeedback writes the ManifestWork's status as the work agent does.
func (s *simApp) writeFeedback(ctx context.Context, c client.Client, since time.Time) error {
	return framework.WriteWorkAgentStatus(ctx, c, s.work, s.gen, s.app, since)
}

// change makes the spoke sync a new revision into health h: the agent's report first
// (what the freshness figure times), then the work agent's feedback when feedback is set.
func (s *simApp) change(ctx context.Context, h *hub, t *tracker, revision string, hs health.HealthStatusCode, feedback bool, since time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.synced(revision, hs, now)
	t.expectChange(s.appSet, s.cluster, s.hubName, revision, hs, now)
	if err := s.publish(ctx, h); err != nil {
		return err
	}
	if s.trees {
		if err := s.publishTree(ctx, h, revision, hs, now); err != nil {
			return err
		}
	}
	if !feedback {
		return nil
	}
	c, err := h.workAgentClient(s.cluster)
	if err != nil {
		return err
	}
	return s.writeFeedback(ctx, c, since)
}

func revision(n uint64) string { return fmt.Sprintf("%040x", n) }
