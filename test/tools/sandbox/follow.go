package main

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// followReport sends the report key names to reports each time the hub has a new version
// of it, and nil when it is deleted, until ctx ends. It watches that one object. The API
// server ends a watch after some minutes; a new watch without a resource version starts
// with the object as it is, so nothing is missed in between.
func followReport(ctx context.Context, hub client.WithWatch, key client.ObjectKey, reports chan<- *appsv1alpha1.MulticlusterApplicationSetReport) {
	send := func(r *appsv1alpha1.MulticlusterApplicationSetReport) bool {
		select {
		case reports <- r:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for ctx.Err() == nil {
		w, err := hub.Watch(ctx, &appsv1alpha1.MulticlusterApplicationSetReportList{},
			client.InNamespace(key.Namespace), client.MatchingFields{"metadata.name": key.Name})
		if err != nil {
			// The sandbox checks the fleet's health on its own; a hub that is down
			// shows there.
			klog.ErrorS(err, "Watching the report", "report", key)
			select {
			case <-time.After(2 * time.Second):
			case <-ctx.Done():
			}
			continue
		}
		for event := range w.ResultChan() {
			r, ok := event.Object.(*appsv1alpha1.MulticlusterApplicationSetReport)
			switch {
			case event.Type == watch.Deleted:
				r = nil
			case event.Type == watch.Error || !ok:
				// The API server ends the watch after an error; the next one starts afresh.
				klog.InfoS("Watching the report: unexpected event", "report", key, "type", event.Type, "object", event.Object)
				continue
			}
			if !send(r) {
				break
			}
		}
		w.Stop()
	}
}
