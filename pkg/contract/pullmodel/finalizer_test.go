package pullmodel

import (
	"testing"

	"k8s.io/utils/ptr"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
)

func TestHoldsResourcesFinalizer(t *testing.T) {
	for name, tc := range map[string]struct {
		label     *string // the pull label's value; nil: no label
		finalizer bool
		// handedBack: the user also removed skip-reconcile ("false"), so the hub's Argo
		// CD processes the Application; noTarget: no target cluster annotation.
		handedBack, noTarget bool
		want                 bool
	}{
		"pulled, with the finalizer":       {label: ptr.To("true"), finalizer: true, want: true},
		"pulled, without it":               {label: ptr.To("true")},
		"invalid pull label: still pulled": {label: ptr.To("yes"), finalizer: true, want: true},
		// The hub's Argo CD skips it as long as skip-reconcile says so: nobody else would
		// ever release it.
		"unmarked with false, still skipped":   {label: ptr.To("false"), finalizer: true, want: true},
		"unmarked by removing the label":       {finalizer: true, want: true},
		"unmarked, without the finalizer":      {label: ptr.To("false")},
		"unmarked and handed to hub's Argo CD": {label: ptr.To("false"), finalizer: true, handedBack: true},
		"label removed, handed to Argo CD":     {finalizer: true, handedBack: true},
		"never pulled: no target cluster":      {finalizer: true, noTarget: true},
	} {
		t.Run(name, func(t *testing.T) {
			b := builders.Application("a").Pulled().Cluster("c1")
			if tc.label == nil {
				b = b.WithoutLabel(apps.LabelPullToOCMManagedCluster)
			} else {
				b = b.Label(apps.LabelPullToOCMManagedCluster, *tc.label)
			}
			if tc.finalizer {
				b = b.Finalizer(ResourcesFinalizer)
			}
			if tc.handedBack {
				b = b.Annotation(apps.AnnotationSkipReconcile, "false")
			}
			if tc.noTarget {
				b = b.WithoutAnnotation(apps.AnnotationOCMManagedCluster)
			}
			if got := HoldsResourcesFinalizer(b.Build()); got != tc.want {
				t.Fatalf("HoldsResourcesFinalizer = %v, want %v", got, tc.want)
			}
		})
	}
}
