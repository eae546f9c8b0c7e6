package aggregation

import (
	"context"
	"fmt"
	"slices"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// inputs reads everything the ApplicationSet's report is built from, from the cache.
func (r *reconciler) inputs(ctx context.Context, key types.NamespacedName) (Inputs, error) {
	in := Inputs{ApplicationSet: key, Agents: map[string]pullmodel.AgentAvailability{}}
	// Build only reads its inputs, so the cached objects are listed without deep copies: a
	// report of thousands of clusters is rebuilt on every change of one of them.
	works := &workv1.ManifestWorkList{}
	if err := r.client.List(ctx, works, client.MatchingFields{applicationSetIndex: key.String()}, client.UnsafeDisableDeepCopy); err != nil {
		return in, fmt.Errorf("listing ManifestWorks of ApplicationSet %s: %w", key, err)
	}
	// A ManifestWork being deleted is an Application leaving its cluster. The lists are
	// filtered in place: in a large fleet a second copy of every item per reconcile was the
	// controller's largest allocation (docs/benchmarks.md, "What the figures decided").
	in.Works = slices.DeleteFunc(works.Items, func(w workv1.ManifestWork) bool { return !w.DeletionTimestamp.IsZero() })
	reports := &appsv1alpha1.ApplicationStatusReportList{}
	if err := r.client.List(ctx, reports, client.MatchingFields{applicationSetIndex: key.String()}, client.UnsafeDisableDeepCopy); err != nil {
		return in, fmt.Errorf("listing ApplicationStatusReports of ApplicationSet %s: %w", key, err)
	}
	in.Reports = slices.DeleteFunc(reports.Items, func(r appsv1alpha1.ApplicationStatusReport) bool { return !r.DeletionTimestamp.IsZero() })
	applications := &argov1alpha1.ApplicationList{}
	if err := r.client.List(ctx, applications, client.MatchingFields{applicationSetIndex: key.String()}, client.UnsafeDisableDeepCopy); err != nil {
		return in, fmt.Errorf("listing Applications of ApplicationSet %s: %w", key, err)
	}
	in.HubConditions = hubConditionsOf(applications.Items)
	in.Undelivered = undelivered(applications.Items, in.Works, in.HubConditions)
	if err := r.hubRenderedInputs(ctx, applications.Items, &in); err != nil {
		return in, err
	}
	for i := range in.Works {
		cluster := in.Works[i].Namespace
		if _, ok := in.Agents[cluster]; ok {
			continue
		}
		agent, err := r.agents.get(ctx, r.client, cluster)
		if err != nil {
			return in, err
		}
		in.Agents[cluster] = agent
	}
	return in, nil
}

// hubConditionsOf are the hub conditions of the pulled ones among applications, by
// Application; those without any are left out.
func hubConditionsOf(applications []argov1alpha1.Application) map[types.NamespacedName][]argov1alpha1.ApplicationCondition {
	out := map[types.NamespacedName][]argov1alpha1.ApplicationCondition{}
	for i := range applications {
		app := &applications[i]
		if !pulled(app) {
			continue
		}
		if c := pullmodel.HubConditions(app.Status.Conditions); len(c) > 0 {
			out[client.ObjectKeyFromObject(app)] = c
		}
	}
	return out
}

// undelivered are those of applications with hub conditions and none of works.
func undelivered(applications []argov1alpha1.Application, works []workv1.ManifestWork,
	hubConditions map[types.NamespacedName][]argov1alpha1.ApplicationCondition) []UndeliveredApplication {
	if len(hubConditions) == 0 {
		return nil
	}
	delivered := make(map[types.NamespacedName]bool, len(works))
	for i := range works {
		if key, ok := pullmodel.HubApplication(&works[i]); ok {
			delivered[key] = true
		}
	}
	var out []UndeliveredApplication
	for i := range applications {
		app := &applications[i]
		key := client.ObjectKeyFromObject(app)
		conditions, ok := hubConditions[key]
		if !ok || delivered[key] || !app.DeletionTimestamp.IsZero() {
			continue
		}
		out = append(out, UndeliveredApplication{
			Name: app.Name, Cluster: pullmodel.TargetCluster(app), Work: pullmodel.WorkName(app), Conditions: conditions,
		})
	}
	return out
}

// hubRenderedInputs adds to in the ApplicationSet's hub-rendered Applications with their
// ManifestWorks: those of applications (the ApplicationSet's, from the field index on the
// manager's cache) that manage a ManifestWork, each with those of its ManifestWorks that
// are hub-rendered and were rendered for it (the controller's own cache). Deleted or
// deleting ones are leaving.
func (r *reconciler) hubRenderedInputs(ctx context.Context, applications []argov1alpha1.Application, in *Inputs) error {
	for i := range applications {
		app := &applications[i]
		if !app.DeletionTimestamp.IsZero() || !isHubRenderedApplication(app) {
			continue
		}
		for _, workKey := range managedWorks(app) {
			mw := &workv1.ManifestWork{}
			err := r.hubRenderedWorks.Get(ctx, workKey, mw)
			if apierrors.IsNotFound(err) {
				// Not hub-rendered (another kind of ManifestWork the Application deploys),
				// or not created yet: its creation brings the ApplicationSet back.
				continue
			}
			if err != nil {
				return fmt.Errorf("getting ManifestWork %s of Application %s: %w", workKey, klog.KObj(app), err)
			}
			if mw.DeletionTimestamp.IsZero() && renderedFor(mw, app) {
				in.HubRendered = append(in.HubRendered, HubRenderedApplication{Application: app, Work: mw})
			}
		}
	}
	return nil
}
