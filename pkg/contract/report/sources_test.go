package report

import (
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"sigs.k8s.io/yaml"
)

// specOf and comparedOf decode YAML the way both sides read their Application: the hub
// Application's spec as a user wrote it, the spoke's status.sync.comparedTo as Argo CD
// wrote it.
func specOf(t *testing.T, y string) *argov1alpha1.ApplicationSpec {
	t.Helper()
	spec := &argov1alpha1.ApplicationSpec{}
	if err := yaml.Unmarshal([]byte(y), spec); err != nil {
		t.Fatal(err)
	}
	return spec
}

func comparedOf(t *testing.T, y string) *argov1alpha1.ComparedTo {
	t.Helper()
	compared := &argov1alpha1.ComparedTo{}
	if err := yaml.Unmarshal([]byte(y), compared); err != nil {
		t.Fatal(err)
	}
	return compared
}

func TestSourcesDigest(t *testing.T) {
	tests := map[string]struct {
		spec, compared string
		same           bool
	}{
		"one source, compared as written": {
			spec:     "source: {repoURL: https://git.example.com/app, path: guestbook, targetRevision: HEAD}\ndestination: {server: https://kubernetes.default.svc}",
			compared: "source: {targetRevision: HEAD, path: guestbook, repoURL: https://git.example.com/app}\ndestination: {server: https://kubernetes.default.svc, namespace: ui}",
			same:     true,
		},
		"one source, the path changed on the hub": {
			spec:     "source: {repoURL: https://git.example.com/app, path: guestbook-v2, targetRevision: HEAD}",
			compared: "source: {repoURL: https://git.example.com/app, path: guestbook, targetRevision: HEAD}",
		},
		"one source, a helm value changed on the hub": {
			spec:     "source: {repoURL: https://git.example.com/app, path: chart, helm: {valuesObject: {replicas: 3, image: {tag: v2}}}}",
			compared: "source: {repoURL: https://git.example.com/app, path: chart, helm: {valuesObject: {replicas: 3, image: {tag: v1}}}}",
		},
		"helm values in another key order are the same": {
			spec:     "source: {repoURL: https://git.example.com/app, path: chart, helm: {valuesObject: {replicas: 3, image: {tag: v1}}}}",
			compared: "source: {repoURL: https://git.example.com/app, path: chart, helm: {valuesObject: {image: {tag: v1}, replicas: 3}}}",
			same:     true,
		},
		"several sources, compared as written": {
			spec:     "sources: [{repoURL: https://git.example.com/a, path: x}, {repoURL: https://git.example.com/b, ref: values}]",
			compared: "sources: [{repoURL: https://git.example.com/a, path: x}, {repoURL: https://git.example.com/b, ref: values}]",
			same:     true,
		},
		"several sources, one added on the hub": {
			spec:     "sources: [{repoURL: https://git.example.com/a, path: x}, {repoURL: https://git.example.com/b, ref: values}]",
			compared: "sources: [{repoURL: https://git.example.com/a, path: x}]",
		},
		"one source became several": {
			spec:     "sources: [{repoURL: https://git.example.com/a, path: x}]",
			compared: "source: {repoURL: https://git.example.com/a, path: y}",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			spec := SpecSourcesDigest(specOf(t, tc.spec))
			compared := ComparedSourcesDigest(comparedOf(t, tc.compared))
			if spec == "" || compared == "" {
				t.Fatalf("empty digest: spec %q, compared %q", spec, compared)
			}
			if got := spec == compared; got != tc.same {
				t.Errorf("same = %v, want %v (spec %s, compared %s)", got, tc.same, spec, compared)
			}
			if len(spec) > 64 {
				t.Errorf("digest of %d characters exceeds the schema's 64", len(spec))
			}
		})
	}
}

func TestSourcesDigestEmpty(t *testing.T) {
	if d := SpecSourcesDigest(&argov1alpha1.ApplicationSpec{}); d != "" {
		t.Errorf("a spec without a source has digest %q, want empty", d)
	}
	if d := ComparedSourcesDigest(&argov1alpha1.ComparedTo{Destination: argov1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc"}}); d != "" {
		t.Errorf("an Application never compared has digest %q, want empty", d)
	}
}

// The agent's report carries the digest of what Argo CD compared, and the hub's digest of
// the same spec matches it.
func TestFromApplicationReportsComparedSources(t *testing.T) {
	app := &argov1alpha1.Application{Spec: *specOf(t, "source: {repoURL: https://git.example.com/app, path: guestbook}")}
	if got := FromApplication(app, nil).Sync.ComparedSources; got != "" {
		t.Fatalf("never compared: ComparedSources = %q, want empty", got)
	}
	app.Status.Sync.ComparedTo = argov1alpha1.ComparedTo{Source: *app.Spec.Source.DeepCopy()}
	got := FromApplication(app, nil).Sync.ComparedSources
	if want := SpecSourcesDigest(&app.Spec); got != want || got == "" {
		t.Errorf("ComparedSources = %q, want the spec's digest %q", got, want)
	}
}
