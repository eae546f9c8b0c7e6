package pullmodel

import (
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func withPullLabel(value string, present bool) client.Object {
	app := pulledApplication("a", "7c0e3f5c")
	if present {
		app.Labels[apps.LabelPullToOCMManagedCluster] = value
	} else {
		delete(app.Labels, apps.LabelPullToOCMManagedCluster)
	}
	return app
}

func TestMarked(t *testing.T) {
	tests := map[string]struct {
		obj                 client.Object
		want, wantErr       bool
		wantLabelPredicate  bool
		wantMarkedPredicate bool
	}{
		"true":     {obj: withPullLabel("true", true), want: true, wantLabelPredicate: true, wantMarkedPredicate: true},
		"false":    {obj: withPullLabel("false", true), wantLabelPredicate: true},
		"no label": {obj: withPullLabel("", false)},
		// Only "true" and "false" are words of the contract: anything else is a mistake to
		// report, neither a marking nor an unmarking.
		"True":          {obj: withPullLabel("True", true), wantErr: true, wantLabelPredicate: true},
		"FALSE":         {obj: withPullLabel("FALSE", true), wantErr: true, wantLabelPredicate: true},
		"1":             {obj: withPullLabel("1", true), wantErr: true, wantLabelPredicate: true},
		"0":             {obj: withPullLabel("0", true), wantErr: true, wantLabelPredicate: true},
		"not a boolean": {obj: withPullLabel("yes", true), wantErr: true, wantLabelPredicate: true},
		"empty":         {obj: withPullLabel("", true), wantErr: true, wantLabelPredicate: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Marked(tc.obj)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Marked() error = %v, wantErr %v", err, tc.wantErr)
			}
			if got != tc.want || IsMarked(tc.obj) != tc.want {
				t.Errorf("Marked() = %v, IsMarked() = %v, want %v", got, IsMarked(tc.obj), tc.want)
			}
			// The controllers' event filters follow the same rule.
			if got := PullLabelPredicate().Create(event.CreateEvent{Object: tc.obj}); got != tc.wantLabelPredicate {
				t.Errorf("PullLabelPredicate passes = %v, want %v", got, tc.wantLabelPredicate)
			}
			if got := MarkedPredicate().Create(event.CreateEvent{Object: tc.obj}); got != tc.wantMarkedPredicate {
				t.Errorf("MarkedPredicate passes = %v, want %v", got, tc.wantMarkedPredicate)
			}
		})
	}
}

// TestPullLabelPredicateSeesUnmarking: the delivering controller must see the label go
// away or turn false, so it can delete the ManifestWork; readers need not.
func TestPullLabelPredicateSeesUnmarking(t *testing.T) {
	marked, unmarked, off := withPullLabel("true", true), withPullLabel("", false), withPullLabel("false", true)
	p := PullLabelPredicate()
	tests := map[string]struct {
		got, want bool
	}{
		"create nil":           {got: p.Create(event.CreateEvent{})},
		"delete marked":        {got: p.Delete(event.DeleteEvent{Object: marked}), want: true},
		"update label removed": {got: p.Update(event.UpdateEvent{ObjectOld: marked, ObjectNew: unmarked}), want: true},
		"update label added":   {got: p.Update(event.UpdateEvent{ObjectOld: unmarked, ObjectNew: marked}), want: true},
		"update never marked":  {got: p.Update(event.UpdateEvent{ObjectOld: unmarked, ObjectNew: unmarked})},
		"update nil objects":   {got: p.Update(event.UpdateEvent{})},
		"generic 'false'":      {got: p.Generic(event.GenericEvent{Object: off}), want: true},
		"readers skip 'false'": {got: MarkedPredicate().Update(event.UpdateEvent{ObjectOld: marked, ObjectNew: off})},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

func TestDeliveredFromHub(t *testing.T) {
	tests := map[string]struct {
		app  *argov1alpha1.Application
		want bool
	}{
		"both hub annotations":       {app: builders.Application("a").PulledFrom("hub", "a").Build(), want: true},
		"created on the cluster":     {app: builders.Application("a").Build()},
		"hub name missing":           {app: builders.Application("a").Annotation(apps.AnnotationHubApplicationNamespace, "hub").Build()},
		"hub namespace empty string": {app: builders.Application("a").PulledFrom("", "a").Build()},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := DeliveredFromHub(tt.app); got != tt.want {
				t.Errorf("DeliveredFromHub() = %v, want %v", got, tt.want)
			}
		})
	}
}
