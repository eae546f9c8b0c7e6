package pullmodel

import (
	"time"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
)

// pulledApplication is a marked hub Application named name with the given UID, pulled to
// cluster c1.
func pulledApplication(name string, uid types.UID) *argov1alpha1.Application {
	return builders.Application(name).Pulled().UID(uid).Cluster("c1").Build()
}

// workOf is a pull-model ManifestWork named name in cluster c1 for the hub Application
// argocd/app, created at created; deleting marks it as being deleted.
func workOf(name, app string, created time.Time, deleting bool) workv1.ManifestWork {
	w := workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "c1", CreationTimestamp: metav1.NewTime(created),
		Labels: map[string]string{apps.LabelPullToOCMManagedCluster: "true"},
		Annotations: map[string]string{
			apps.AnnotationHubApplicationNamespace: "argocd",
			apps.AnnotationHubApplicationName:      app,
		},
	}}
	if deleting {
		now := metav1.NewTime(created.Add(time.Minute))
		w.DeletionTimestamp = &now
	}
	return w
}
