package pullmodel

import (
	"strings"
	"testing"
	"time"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	workv1 "open-cluster-management.io/api/work/v1"
)

const uid = "7c0e3f5c-0b9a-4d5e-9b7e-1f2a3b4c5d6e"

func TestWorkName(t *testing.T) {
	long := strings.Repeat("a", 253)
	tests := map[string]struct {
		app  *argov1alpha1.Application
		want string
	}{
		"short":        {app: pulledApplication("guestbook", uid), want: "guestbook-7c0e3"},
		"exactly 253":  {app: pulledApplication(strings.Repeat("b", 247), uid), want: strings.Repeat("b", 247) + "-7c0e3"},
		"short uid":    {app: pulledApplication("g", "ab"), want: "g-ab"},
		"dots trimmed": {app: pulledApplication(strings.Repeat("c", 241)+"...."+strings.Repeat("d", 8), uid)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := WorkName(tc.app)
			if tc.want != "" && got != tc.want {
				t.Errorf("WorkName() = %q, want %q", got, tc.want)
			}
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
				t.Errorf("WorkName() = %q is not a valid name: %v", got, errs)
			}
		})
	}

	t.Run("over-long names get a stable hash suffix", func(t *testing.T) {
		a := pulledApplication(long, uid)
		b := pulledApplication(long, "ffffff-other")
		na, nb := WorkName(a), WorkName(b)
		if len(na) != 253 || len(nb) != 253 {
			t.Fatalf("lengths %d and %d, want 253", len(na), len(nb))
		}
		if na == nb {
			t.Errorf("two UIDs share the name %q", na)
		}
		if WorkName(a.DeepCopy()) != na {
			t.Errorf("WorkName is not stable")
		}
		if !strings.HasPrefix(na, strings.Repeat("a", 200)) {
			t.Errorf("WorkName() = %q lost the Application name", na)
		}
	})
}

func TestCurrentWork(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	app := pulledApplication("guestbook", uid)
	long := pulledApplication(strings.Repeat("l", 250), uid)
	tests := map[string]struct {
		app   *argov1alpha1.Application
		works []workv1.ManifestWork
		want  string
	}{
		"none":    {app: app},
		"the one": {app: app, works: []workv1.ManifestWork{workOf("guestbook-7c0e3", "guestbook", t0, false)}, want: "guestbook-7c0e3"},
		"the current UID's wins over a newer one of a previous Application": {
			app: app,
			works: []workv1.ManifestWork{
				workOf("guestbook-7c0e3", "guestbook", t0, false),
				workOf("guestbook-aaaaa", "guestbook", t0.Add(time.Hour), false),
			},
			want: "guestbook-7c0e3",
		},
		// A long Application's work name ends with a hash, not with its UID prefix.
		"the current UID's wins when its name is hashed": {
			app: long,
			works: []workv1.ManifestWork{
				workOf(WorkName(pulledApplication(long.Name, "aaaaa-old")), long.Name, t0.Add(time.Hour), false),
				workOf(WorkName(long), long.Name, t0, false),
			},
			want: WorkName(long),
		},
		"the target cluster's wins over the kept one elsewhere (a valid retarget, the old not gone yet)": {
			app: app,
			works: []workv1.ManifestWork{
				inNamespace(workOf("guestbook-7c0e3", "guestbook", t0, false), "c0"),
				workOf("guestbook-7c0e3", "guestbook", t0, false),
			},
			want: "c1/guestbook-7c0e3",
		},
		"the only one, in a cluster the Application no longer names (its target invalid), still speaks for it": {
			app:   app,
			works: []workv1.ManifestWork{inNamespace(workOf("guestbook-7c0e3", "guestbook", t0, false), "c0")},
			want:  "c0/guestbook-7c0e3",
		},
		"one not being deleted wins": {
			app: app,
			works: []workv1.ManifestWork{
				workOf("guestbook-aaaaa", "guestbook", t0.Add(time.Hour), true),
				workOf("guestbook-bbbbb", "guestbook", t0, false),
			},
			want: "guestbook-bbbbb",
		},
		"then the newest": {
			app: app,
			works: []workv1.ManifestWork{
				workOf("guestbook-aaaaa", "guestbook", t0, false),
				workOf("guestbook-bbbbb", "guestbook", t0.Add(time.Hour), false),
			},
			want: "guestbook-bbbbb",
		},
		"then the first by name": {
			app: app,
			works: []workv1.ManifestWork{
				workOf("guestbook-bbbbb", "guestbook", t0, false),
				workOf("guestbook-aaaaa", "guestbook", t0, false),
			},
			want: "guestbook-aaaaa",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := CurrentWork(tc.app, tc.works)
			gotName := ""
			if got != nil {
				gotName = got.Name
				if strings.Contains(tc.want, "/") {
					gotName = got.Namespace + "/" + got.Name
				}
			}
			if gotName != tc.want {
				t.Errorf("CurrentWork = %q, want %q", gotName, tc.want)
			}
		})
	}
}

func TestHubApplicationAndIndex(t *testing.T) {
	w := workOf("guestbook-7c0e3", "guestbook", time.Time{}, false)
	key, ok := HubApplication(&w)
	if !ok || key != (types.NamespacedName{Namespace: "argocd", Name: "guestbook"}) {
		t.Errorf("HubApplication = %v, %v", key, ok)
	}
	if got := indexByHubApplication(&w); len(got) != 1 || got[0] != "argocd/guestbook" {
		t.Errorf("index keys = %v, want [argocd/guestbook]", got)
	}
	delete(w.Annotations, apps.AnnotationHubApplicationName)
	if _, ok := HubApplication(&w); ok {
		t.Error("a work without the hub Application name maps to one")
	}
	if got := indexByHubApplication(&w); got != nil {
		t.Errorf("index keys = %v, want none", got)
	}
}

func TestHostingApplicationSet(t *testing.T) {
	tests := map[string]struct {
		label, annotation string
		want              types.NamespacedName
		wantOK            bool
	}{
		"owned":               {label: "true", annotation: "argocd/guestbook", want: types.NamespacedName{Namespace: "argocd", Name: "guestbook"}, wantOK: true},
		"standalone":          {label: "true"},
		"not marked":          {label: "false", annotation: "argocd/guestbook"},
		"no namespace":        {label: "true", annotation: "/guestbook"},
		"too many separators": {label: "true", annotation: "argocd/guest/book"},
		"no separator at all": {label: "true", annotation: "guestbook"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{
				Labels:      map[string]string{apps.LabelPullToOCMManagedCluster: tc.label},
				Annotations: map[string]string{apps.AnnotationHostingApplicationSet: tc.annotation},
			}}
			got, ok := HostingApplicationSet(&w)
			if ok != tc.wantOK || got != tc.want {
				t.Errorf("HostingApplicationSet = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestOwningApplicationSets(t *testing.T) {
	app := pulledApplication("guestbook-c1", uid)
	app.OwnerReferences = []metav1.OwnerReference{
		{APIVersion: "argoproj.io/v1alpha1", Kind: "ApplicationSet", Name: "guestbook"},
		{APIVersion: "example.com/v1", Kind: "ApplicationSet", Name: "impostor"},
		{APIVersion: "argoproj.io/v1alpha1", Kind: "AppProject", Name: "default"},
	}
	got := OwningApplicationSets(app)
	if len(got) != 1 || got[0] != (types.NamespacedName{Namespace: "argocd", Name: "guestbook"}) {
		t.Errorf("OwningApplicationSets = %v, want [argocd/guestbook]", got)
	}
}

func inNamespace(w workv1.ManifestWork, namespace string) workv1.ManifestWork {
	w.Namespace = namespace
	return w
}
