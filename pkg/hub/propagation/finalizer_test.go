package propagation

import (
	"testing"

	"k8s.io/utils/ptr"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
)

func TestHoldsResourcesFinalizer(t *testing.T) {
	for name, tc := range map[string]struct {
		label     *string // the pull label's value; nil: no label
		finalizer bool
		want      bool
	}{
		"pulled, with the finalizer":            {label: ptr.To("true"), finalizer: true, want: true},
		"pulled, without it":                    {label: ptr.To("true")},
		"invalid pull label: still pulled":      {label: ptr.To("yes"), finalizer: true, want: true},
		"unmarked: the hub's Argo CD releases":  {label: ptr.To("false"), finalizer: true},
		"never pulled: the hub's Argo CD's own": {finalizer: true},
	} {
		t.Run(name, func(t *testing.T) {
			b := hubApplication("a").Cluster("c1")
			if tc.label == nil {
				b = b.WithoutLabel(apps.LabelPullToOCMManagedCluster)
			} else {
				b = b.Label(apps.LabelPullToOCMManagedCluster, *tc.label)
			}
			if tc.finalizer {
				b = b.Finalizer(ResourcesFinalizer)
			}
			if got := HoldsResourcesFinalizer(b.Build()); got != tc.want {
				t.Fatalf("HoldsResourcesFinalizer = %v, want %v", got, tc.want)
			}
		})
	}
}
