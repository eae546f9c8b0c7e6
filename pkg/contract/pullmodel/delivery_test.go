package pullmodel

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
)

func TestDeliveredApplication(t *testing.T) {
	configured := workOf("guestbook-7c0e3", "guestbook", time.Now(), false)
	configured.Spec.ManifestConfigs = []workv1.ManifestConfigOption{
		{ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: "elsewhere", Name: "x"}},
		{ResourceIdentifier: workv1.ResourceIdentifier{Group: "argoproj.io", Resource: "applications", Namespace: "openshift-gitops", Name: "guestbook"}},
	}
	fromStatus := workOf("guestbook-7c0e3", "guestbook", time.Now(), false)
	fromStatus.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{ResourceMeta: workv1.ManifestResourceMeta{
		Group: "argoproj.io", Version: "v1alpha1", Kind: "Application", Resource: "applications", Namespace: "team-a", Name: "guestbook",
	}}}
	bare := workOf("guestbook-7c0e3", "guestbook", time.Now(), false)

	tests := map[string]struct {
		mw     *workv1.ManifestWork
		want   types.NamespacedName
		wantOK bool
	}{
		"from the Application's manifest config": {mw: &configured, want: types.NamespacedName{Namespace: "openshift-gitops", Name: "guestbook"}, wantOK: true},
		"from the work agent's status":           {mw: &fromStatus, want: types.NamespacedName{Namespace: "team-a", Name: "guestbook"}, wantOK: true},
		"neither":                                {mw: &bare},
		"no work":                                {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := DeliveredApplication(tc.mw)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("DeliveredApplication() = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
