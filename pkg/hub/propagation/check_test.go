package propagation

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/requests"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

// TestCheckInput has one row per input rule the controller applies before building a
// ManifestWork: each mistake names its Event reason and an InvalidSpecError condition, and
// only a label "false" or no label at all unmarks.
func TestCheckInput(t *testing.T) {
	clusters := map[string]*clusterv1.ManagedCluster{
		"cluster1": {ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}},
		"leaving":  {ObjectMeta: metav1.ObjectMeta{Name: "leaving", DeletionTimestamp: ptr.To(metav1.Now()), Finalizers: []string{"x"}}},
		"hub":      {ObjectMeta: metav1.ObjectMeta{Name: "hub", Labels: map[string]string{LabelLocalCluster: "true"}}},
	}
	app := func() *builders.ApplicationBuilder { return hubApplication("a").Cluster("cluster1") }
	tests := map[string]struct {
		app        *argov1alpha1.Application
		wantPulled bool
		wantReason string // "": no problem
		wantText   string
	}{
		"valid":                {app: app().Build(), wantPulled: true},
		"valid, spaces around": {app: app().Cluster(" cluster1 ").Build(), wantPulled: true},
		"no pull label":        {app: app().WithoutLabel(apps.LabelPullToOCMManagedCluster).Build()},
		"pull label false":     {app: app().Label(apps.LabelPullToOCMManagedCluster, "false").Build()},

		"pull label True": {app: app().Label(apps.LabelPullToOCMManagedCluster, "True").Build(), wantPulled: true,
			wantReason: ReasonInvalidPullLabel, wantText: `="True" is neither "true" nor "false"`},
		"pull label yes": {app: app().Label(apps.LabelPullToOCMManagedCluster, "yes").Build(), wantPulled: true,
			wantReason: ReasonInvalidPullLabel, wantText: `="yes" is neither`},
		"pull label empty": {app: app().Label(apps.LabelPullToOCMManagedCluster, "").Build(), wantPulled: true,
			wantReason: ReasonInvalidPullLabel, wantText: `="" is neither`},
		"cluster annotation missing": {app: app().WithoutAnnotation(apps.AnnotationOCMManagedCluster).Build(), wantPulled: true,
			wantReason: ReasonInvalidApplication, wantText: "is missing or empty"},
		"cluster annotation empty": {app: app().Cluster("").Build(), wantPulled: true,
			wantReason: ReasonInvalidApplication, wantText: "is missing or empty"},
		"cluster annotation not a name": {app: app().Cluster("Cluster_1").Build(), wantPulled: true,
			wantReason: ReasonInvalidApplication, wantText: "is not a valid cluster name"},
		"spoke namespace not a name": {app: app().Annotation(apps.AnnotationOCMManagedClusterAppNamespace, "Argo CD").Build(), wantPulled: true,
			wantReason: ReasonInvalidApplication, wantText: "is not a namespace name"},
		"both destination overrides": {app: app().Annotation(apps.AnnotationDestinationName, "in-cluster").
			Annotation(apps.AnnotationDestinationServer, "https://10.0.0.1:6443").Build(), wantPulled: true,
			wantReason: ReasonInvalidApplication, wantText: "keep only one"},
		"empty destination-name": {app: app().Annotation(apps.AnnotationDestinationName, " ").Build(), wantPulled: true,
			wantReason: ReasonInvalidApplication, wantText: "is empty"},
		"destination-server without https://": {app: app().Annotation(apps.AnnotationDestinationServer, "kubernetes.default.svc").Build(), wantPulled: true,
			wantReason: ReasonInvalidApplication, wantText: `="kubernetes.default.svc" is not an https URL`},
		"several mistakes, one line": {app: app().Annotation(apps.AnnotationDestinationServer, "http://x").
			Annotation(apps.AnnotationOCMManagedClusterAppNamespace, "_").Build(), wantPulled: true,
			wantReason: ReasonInvalidApplication, wantText: "; annotation "},
		"cluster does not exist": {app: app().Cluster("nowhere").Build(), wantPulled: true,
			wantReason: ReasonClusterNotFound, wantText: `"nowhere" named by annotation`},
		"cluster being deleted": {app: app().Cluster("leaving").Build(), wantPulled: true,
			wantReason: ReasonClusterDeleting, wantText: "is being deleted"},
		"cluster is the hub": {app: app().Cluster("hub").Build(), wantPulled: true,
			wantReason: ReasonLocalCluster, wantText: "is the hub itself"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var looked []string
			lookup := func(_ context.Context, name string) (*clusterv1.ManagedCluster, error) {
				looked = append(looked, name)
				return clusters[name], nil
			}
			pulled, target, p, err := checkInput(context.Background(), tc.app, lookup)
			if err != nil {
				t.Fatal(err)
			}
			// The target comes back for the checks that follow only when nothing is wrong.
			if wantTarget := tc.wantPulled && tc.wantReason == ""; wantTarget != (target != nil) ||
				(target != nil && target != clusters[pullmodel.TargetCluster(tc.app)]) {
				t.Errorf("target = %v, want the looked-up cluster: %v", target, wantTarget)
			}
			if pulled != tc.wantPulled {
				t.Errorf("pulled = %v, want %v", pulled, tc.wantPulled)
			}
			// The target is read only for an Application valid up to it.
			wantLookup := tc.wantPulled && (tc.wantReason == "" || tc.wantReason == ReasonClusterNotFound ||
				tc.wantReason == ReasonClusterDeleting || tc.wantReason == ReasonLocalCluster)
			if wantLookup != (len(looked) == 1) || len(looked) > 1 {
				t.Errorf("looked up clusters %q, want a lookup: %v", looked, wantLookup)
			}
			switch {
			case tc.wantReason == "" && p != nil:
				t.Fatalf("unexpected problem %+v", p)
			case tc.wantReason == "":
				return
			case p == nil:
				t.Fatalf("no problem, want %s", tc.wantReason)
			}
			if p.reason != tc.wantReason || p.condition != pullmodel.ConditionInvalidSpec {
				t.Errorf("problem %s/%s, want %s/%s", p.condition, p.reason, pullmodel.ConditionInvalidSpec, tc.wantReason)
			}
			if !strings.Contains(p.message, tc.wantText) || strings.Contains(p.message, "\n") {
				t.Errorf("message %q does not contain %q on one line", p.message, tc.wantText)
			}
		})
	}
}

func TestCheckInputLookupError(t *testing.T) {
	boom := errors.New("cache not synced")
	_, _, _, err := checkInput(context.Background(), hubApplication("a").Cluster("cluster1").Build(),
		func(context.Context, string) (*clusterv1.ManagedCluster, error) { return nil, boom })
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want the lookup's error (retried, not reported as bad input)", err)
	}
}

func workOfSize(t *testing.T, size int) *workv1.ManifestWork {
	t.Helper()
	w, err := BuildManifestWork(stored(t, hubApplication("a").Cluster("cluster1").Build()), requests.Carried{})
	if err != nil {
		t.Fatal(err)
	}
	// Manifest.Size() adds a tag byte and the length as a varint to the raw bytes.
	for varint := 1; varint <= 4; varint++ {
		w.Spec.Workload.Manifests[0].Raw = make([]byte, size-1-varint)
		if pullmodel.ManifestsSize(w.Spec.Workload.Manifests) == size {
			return w
		}
	}
	t.Fatalf("test set-up: no manifest of size %d", size)
	return nil
}

func TestCheckSize(t *testing.T) {
	tests := map[string]struct {
		size    int
		wantErr bool
	}{
		"small":              {size: 4 << 10},
		"at OCM's limit":     {size: pullmodel.ManifestsLimit},
		"one byte over":      {size: pullmodel.ManifestsLimit + 1, wantErr: true},
		"far over (a 1 MiB)": {size: 1 << 20, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := checkSize(workOfSize(t, tc.size))
			if (p != nil) != tc.wantErr {
				t.Fatalf("problem = %+v, want one: %v", p, tc.wantErr)
			}
			if p == nil {
				return
			}
			if p.condition != pullmodel.ConditionDeliveryError || p.reason != ReasonManifestWorkTooLarge {
				t.Errorf("problem %s/%s", p.condition, p.reason)
			}
			for _, want := range []string{"cluster1/a-7c0e3", "512000 bytes", strconv.Itoa(tc.size) + " bytes"} {
				if !strings.Contains(p.message, want) {
					t.Errorf("message %q does not name %q", p.message, want)
				}
			}
		})
	}
}

// TestRefusal: what the API server refuses for good becomes a DeliveryError with its
// message; what may pass on a retry stays an error.
func TestRefusal(t *testing.T) {
	gr := schema.GroupResource{Group: "work.open-cluster-management.io", Resource: "manifestworks"}
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "a-7c0e3"}}
	tests := map[string]struct {
		err      error
		wantText string // "": not a refusal
	}{
		"namespace terminating": {err: apierrors.NewForbidden(gr, "a-7c0e3",
			errors.New("unable to create new content in namespace cluster1 because it is being terminated")), wantText: "because it is being terminated"},
		"invalid": {err: apierrors.NewInvalid(schema.GroupKind{Group: gr.Group, Kind: "ManifestWork"}, "a-7c0e3", nil), wantText: "is invalid"},
		"webhook denial": {err: apierrors.NewBadRequest(`admission webhook "manifestworkvalidators.admission.work.open-cluster-management.io" denied the request`),
			wantText: "denied the request"},
		"too large for the server": {err: apierrors.NewRequestEntityTooLargeError("limit is 3145728"), wantText: "limit is 3145728"},
		"wrapped": {err: errors.Join(errors.New("creating ManifestWork cluster1/a-7c0e3"),
			apierrors.NewForbidden(gr, "a-7c0e3", errors.New("policy says no"))), wantText: "policy says no"},
		"conflict":         {err: apierrors.NewConflict(gr, "a-7c0e3", errors.New("changed"))},
		"timeout":          {err: apierrors.NewServerTimeout(gr, "create", 1)},
		"unavailable":      {err: apierrors.NewServiceUnavailable("etcd")},
		"not an API error": {err: errors.New("connection refused")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := refusal(w, tc.err)
			if (p != nil) != (tc.wantText != "") {
				t.Fatalf("problem = %+v, want one: %v", p, tc.wantText != "")
			}
			if p == nil {
				return
			}
			if p.condition != pullmodel.ConditionDeliveryError || p.reason != ReasonManifestWorkRefused {
				t.Errorf("problem %s/%s", p.condition, p.reason)
			}
			if !strings.Contains(p.message, tc.wantText) || !strings.Contains(p.message, "cluster1/a-7c0e3") {
				t.Errorf("message %q does not name the work and %q", p.message, tc.wantText)
			}
		})
	}
}

func TestHeldMessage(t *testing.T) {
	p := invalid(ReasonClusterNotFound, "ManagedCluster \"x\" does not exist: fix the annotation")
	if got := heldMessage(p, nil); got != p.message {
		t.Errorf("nothing delivered before: %q, want %q", got, p.message)
	}
	kept := []workv1.ManifestWork{{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "a-7c0e3"}}}
	want := p.message + ". The ManifestWork cluster1/a-7c0e3 delivered before is kept unchanged until then"
	if got := heldMessage(p, kept); got != want {
		t.Errorf("heldMessage() = %q, want %q", got, want)
	}
}
