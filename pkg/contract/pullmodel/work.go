package pullmodel

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/naming"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// uidPrefixLength is how much of the Application's UID its work's name carries, so a
	// recreated Application gets a new work rather than adopting the old one.
	uidPrefixLength = 5
	// workNameHashLength is how many hex characters of a hash end an over-long work name.
	workNameHashLength = 10
)

// WorkName is the ManifestWork name of app: "<name>-<first 5 characters of its UID>",
// shortened with a stable hash when longer than an object name may be.
func WorkName(app metav1.Object) string {
	uid := string(app.GetUID())
	if len(uid) > uidPrefixLength {
		uid = uid[:uidPrefixLength]
	}
	return naming.Bounded(app.GetName()+"-"+uid, validation.DNS1123SubdomainMaxLength, workNameHashLength)
}

// TargetCluster is the managed cluster a hub Application is pulled to, which is also its
// ManifestWork's namespace.
func TargetCluster(app metav1.Object) string {
	return strings.TrimSpace(app.GetAnnotations()[apps.AnnotationOCMManagedCluster])
}

// HubApplication is the hub Application a ManifestWork belongs to, from its
// hub-application annotations.
func HubApplication(work metav1.Object) (types.NamespacedName, bool) {
	ann := work.GetAnnotations()
	key := types.NamespacedName{Namespace: ann[apps.AnnotationHubApplicationNamespace], Name: ann[apps.AnnotationHubApplicationName]}
	return key, key.Namespace != "" && key.Name != ""
}

// HubApplicationIndex indexes the cached ManifestWorks by the "<namespace>/<name>" of
// their hub Application (HubApplication). SetupIndexes registers it once per manager.
const HubApplicationIndex = "pullmodel.hubApplication"

// SetupIndexes registers the field indexes the hub controllers share.
func SetupIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &workv1.ManifestWork{}, HubApplicationIndex, indexByHubApplication); err != nil {
		return fmt.Errorf("indexing ManifestWorks by hub Application: %w", err)
	}
	return nil
}

func indexByHubApplication(obj client.Object) []string {
	if key, ok := HubApplication(obj); ok {
		return []string{key.String()}
	}
	return nil
}

// WorksOf lists the cached ManifestWorks of the hub Application key; opts narrow the
// list (a namespace, say).
func WorksOf(ctx context.Context, c client.Reader, key types.NamespacedName, opts ...client.ListOption) ([]workv1.ManifestWork, error) {
	list := &workv1.ManifestWorkList{}
	opts = append(opts, client.MatchingFields{HubApplicationIndex: key.String()})
	if err := c.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("listing the ManifestWorks of Application %s: %w", key, err)
	}
	return list.Items, nil
}

// CurrentWork picks, of the ManifestWorks of app, the one that speaks for it. Normally
// there is one; while a work is replaced (the Application was recreated with a new UID,
// or retargeted) there may briefly be two, and one in the target cluster's namespace,
// then the one named for app (WorkName), then one not being deleted, then the newest,
// then the first by name wins. A work in another namespace still speaks for app while
// it is the only one: the last good delivery, kept while app's target is invalid. Nil
// when works is empty.
func CurrentWork(app *argov1alpha1.Application, works []workv1.ManifestWork) *workv1.ManifestWork {
	if len(works) == 0 {
		return nil
	}
	name, cluster := WorkName(app), TargetCluster(app)
	rank := func(w *workv1.ManifestWork) int {
		score := 0
		if w.Namespace == cluster {
			score += 4
		}
		if w.Name == name {
			score += 2
		}
		if w.DeletionTimestamp.IsZero() {
			score++
		}
		return score
	}
	best := slices.MinFunc(works, func(a, b workv1.ManifestWork) int {
		return cmp.Or(
			cmp.Compare(rank(&b), rank(&a)),
			b.CreationTimestamp.Compare(a.CreationTimestamp.Time),
			cmp.Compare(a.Name, b.Name),
		)
	})
	for i := range works {
		if works[i].Namespace == best.Namespace && works[i].Name == best.Name {
			return &works[i]
		}
	}
	return nil
}

// OwningApplicationSets are the ApplicationSets that own app (the ApplicationSet
// controller sets one controller reference; an ApplicationSet is always in its
// Applications' namespace).
func OwningApplicationSets(app metav1.Object) []types.NamespacedName {
	var out []types.NamespacedName
	for _, ref := range app.GetOwnerReferences() {
		if ref.Kind == applicationSetKind && strings.HasPrefix(ref.APIVersion, argov1alpha1.SchemeGroupVersion.Group+"/") && ref.Name != "" {
			out = append(out, types.NamespacedName{Namespace: app.GetNamespace(), Name: ref.Name})
		}
	}
	return out
}

const applicationSetKind = "ApplicationSet"

// HostingApplicationSet is the ApplicationSet of a marked ManifestWork, from its
// apps.AnnotationHostingApplicationSet annotation; false for a standalone Application's.
func HostingApplicationSet(work metav1.Object) (types.NamespacedName, bool) {
	if !IsMarked(work) {
		return types.NamespacedName{}, false
	}
	return ParseApplicationSet(work.GetAnnotations()[apps.AnnotationHostingApplicationSet])
}

// ParseApplicationSet splits an ApplicationSet written "<namespace>/<name>", the form of
// apps.AnnotationHostingApplicationSet and of an agent report's source.
func ParseApplicationSet(s string) (types.NamespacedName, bool) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}
