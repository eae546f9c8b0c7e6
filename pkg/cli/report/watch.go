package report

import (
	"bytes"
	"context"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// watchReports prints v's rendering of q's reports, then again on every change that
// changes it, until ctx ends. An informer lists and watches the reports (and lists again
// when the API server ends a watch it cannot resume), so the output follows the hub
// without polling.
func watchReports(ctx context.Context, c client.WithWatch, q query, v *view, out io.Writer) error {
	// The informer retries a refused list forever, logging only: fail on one first (no
	// access to the reports, no such API on the server).
	probe := metav1.ListOptions{Limit: 1}
	if err := c.List(ctx, &appsv1alpha1.MulticlusterApplicationSetReportList{}, listOptions(q, probe)); err != nil {
		return fmt.Errorf("listing MulticlusterApplicationSetReports: %w", err)
	}
	// Changes coalesce: a burst of events renders once.
	changed := make(chan struct{}, 1)
	notify := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	store, informer := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: listWatch(c, q),
		ObjectType:    &appsv1alpha1.MulticlusterApplicationSetReport{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { notify() },
			UpdateFunc: func(any, any) { notify() },
			DeleteFunc: func(any) { notify() },
		},
	})
	go informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil // interrupted before the first list
	}
	var last []byte
	for {
		text, err := v.render(storedReports(store))
		if err != nil {
			return err
		}
		if !bytes.Equal(text, last) {
			if last != nil && v.objects == nil {
				fmt.Fprintln(out) // a blank line between tables
			}
			if _, err := out.Write(text); err != nil {
				return err
			}
			last = text
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

// listWatch lists and watches q's reports: q's namespace ("" for all), only q's name
// when set.
func listWatch(c client.WithWatch, q query) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list := &appsv1alpha1.MulticlusterApplicationSetReportList{}
			return list, c.List(ctx, list, listOptions(q, opts))
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, &appsv1alpha1.MulticlusterApplicationSetReportList{}, listOptions(q, opts))
		},
	}
}

// listOptions are opts for q's reports.
func listOptions(q query, opts metav1.ListOptions) *client.ListOptions {
	if q.name != "" {
		opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", q.name).String()
	}
	// The client copies Limit and Continue over Raw's: pass the reflector's paging on.
	return &client.ListOptions{Namespace: q.namespace, Limit: opts.Limit, Continue: opts.Continue, Raw: &opts}
}

// storedReports are the reports in the informer's store.
func storedReports(store cache.Store) []appsv1alpha1.MulticlusterApplicationSetReport {
	objs := store.List()
	reports := make([]appsv1alpha1.MulticlusterApplicationSetReport, 0, len(objs))
	for _, obj := range objs {
		if r, ok := obj.(*appsv1alpha1.MulticlusterApplicationSetReport); ok {
			reports = append(reports, *r)
		}
	}
	return reports
}
