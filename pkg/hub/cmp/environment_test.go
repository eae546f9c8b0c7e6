package cmp

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEnvironmentFrom(t *testing.T) {
	tests := map[string]struct {
		vars     map[string]string
		want     Environment
		wantWork string
		wantErr  string
	}{
		"the destination namespace is the target cluster": {
			vars:     guestbookEnv(),
			want:     Environment{AppName: "guestbook", AppNamespace: "argocd", Cluster: "cluster1", Namespace: "guestbook", Revision: "53e28ff20cc530b9ada2173fbbd64d48338583ba"},
			wantWork: "guestbook",
		},
		"plugin env CLUSTER wins over the destination namespace": {
			vars:     with(guestbookEnv(), EnvCluster, "cluster2"),
			want:     Environment{AppName: "guestbook", AppNamespace: "argocd", Cluster: "cluster2", Namespace: "guestbook", Revision: "53e28ff20cc530b9ada2173fbbd64d48338583ba"},
			wantWork: "guestbook",
		},
		"an Application outside Argo CD's namespace": {
			vars:     map[string]string{EnvAppName: "team-a_guestbook", EnvAppNamespace: "cluster1", EnvArgoCDNamespace: "argocd"},
			want:     Environment{AppName: "guestbook", AppNamespace: "team-a", Cluster: "cluster1", qualified: true},
			wantWork: "team-a.guestbook",
		},
		"Argo CD's namespace unknown: no hub namespace": {
			vars:     map[string]string{EnvAppName: "guestbook", EnvAppNamespace: "cluster1"},
			want:     Environment{AppName: "guestbook", Cluster: "cluster1"},
			wantWork: "guestbook",
		},
		"helm values files": {
			vars:     map[string]string{EnvAppName: "web", EnvAppNamespace: "cluster1", EnvHelmValues: " a.yaml,,b.yaml "},
			want:     Environment{AppName: "web", Cluster: "cluster1", HelmValues: []string{"a.yaml", "b.yaml"}},
			wantWork: "web",
		},
		"a very long name is shortened with a hash": {
			vars:     map[string]string{EnvAppName: strings.Repeat("a", 300), EnvAppNamespace: "cluster1"},
			want:     Environment{AppName: strings.Repeat("a", 300), Cluster: "cluster1"},
			wantWork: strings.Repeat("a", 242) + "-",
		},
		"not run by Argo CD": {
			vars:    map[string]string{EnvAppNamespace: "cluster1"},
			wantErr: "ARGOCD_APP_NAME is not set: run this command as an Argo CD Config Management Plugin, or set it to the Application's name",
		},
		"no destination namespace and no CLUSTER": {
			vars:    map[string]string{EnvAppName: "guestbook"},
			wantErr: "no target cluster: set the Application's spec.destination.namespace to the cluster's namespace on the hub, or the plugin env CLUSTER (ARGOCD_ENV_CLUSTER)",
		},
		"a target cluster that is no cluster name": {
			vars:    map[string]string{EnvAppName: "guestbook", EnvCluster: "Cluster_1"},
			wantErr: `target cluster "Cluster_1" from ARGOCD_ENV_CLUSTER is not a cluster name`,
		},
		"a NAMESPACE that is no namespace name": {
			vars:    map[string]string{EnvAppName: "guestbook", EnvAppNamespace: "cluster1", EnvNamespace: "Guest Book"},
			wantErr: `plugin env NAMESPACE (ARGOCD_ENV_NAMESPACE) "Guest Book" is not a namespace name`,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := EnvironmentFrom(func(k string) string { return tt.vars[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(Environment{})); diff != "" {
				t.Errorf("Environment (-want +got):\n%s", diff)
			}
			if work := got.WorkName(); !strings.HasPrefix(work, tt.wantWork) || len(work) > maxWorkNameLength {
				t.Errorf("WorkName() = %q, want %q (at most %d characters)", work, tt.wantWork, maxWorkNameLength)
			}
		})
	}
}
