package reporttable

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
)

var (
	allSynced = appsv1alpha1.ReportSummary{Clusters: "2", Synced: "2", Healthy: "2", NotSynced: "0", NotHealthy: "0", InProgress: "0", AgentsUnavailable: "0"}
	now       = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
)

func TestWrite(t *testing.T) {
	tests := map[string]struct {
		reports []appsv1alpha1.MulticlusterApplicationSetReport
		opts    Options
		want    string
	}{
		"no entries yet": {
			reports: []appsv1alpha1.MulticlusterApplicationSetReport{newReport("guestbook-app", appsv1alpha1.ReportSummary{})},
			want: "No cluster entries.\n" +
				"0 clusters: 0 synced, 0 healthy, 0 in progress (0 not synced, 0 not healthy)\n",
		},
		"two clusters synced and healthy, sorted by cluster": {
			reports: []appsv1alpha1.MulticlusterApplicationSetReport{newReport("guestbook-app", allSynced,
				builders.ClusterEntry("cluster2").Status("Synced", "Healthy").Agent(true),
				builders.ClusterEntry("cluster1").Status("Synced", "Healthy").Agent(true),
			)},
			want: "CLUSTER    APP                      SYNC     HEALTH    AGENT       ERRORS\n" +
				"cluster1   cluster1-guestbook-app   Synced   Healthy   available   -\n" +
				"cluster2   cluster2-guestbook-app   Synced   Healthy   available   -\n" +
				"2 clusters: 2 synced, 2 healthy, 0 in progress (0 not synced, 0 not healthy, 0 agents unavailable)\n",
		},
		"errors on one line, agent unknown or unavailable, status not reported yet": {
			reports: []appsv1alpha1.MulticlusterApplicationSetReport{newReport("guestbook-app",
				appsv1alpha1.ReportSummary{Clusters: "2", NotSynced: "2", NotHealthy: "1", AgentsUnavailable: "1"},
				builders.ClusterEntry("cluster1").Status("OutOfSync", "Missing").Agent(false).
					Condition("AgentUnavailable", "since 10:00").
					Condition("ComparisonError", "path\tguestbook/missing:\nno such directory"),
				builders.ClusterEntry("cluster2"),
			)},
			want: "CLUSTER    APP                      SYNC        HEALTH    AGENT         ERRORS\n" +
				"cluster1   cluster1-guestbook-app   OutOfSync   Missing   unavailable   AgentUnavailable: since 10:00; ComparisonError: path guestbook/missing: no such directory\n" +
				"cluster2   cluster2-guestbook-app   -           -         -             -\n" +
				"2 clusters: 0 synced, 0 healthy, 0 in progress (2 not synced, 1 not healthy, 1 agents unavailable)\n",
		},
		"an App not in the four-part form is shown as is; truncation is said": {
			reports: func() []appsv1alpha1.MulticlusterApplicationSetReport {
				e := builders.ClusterEntry("c1").Status("Synced", "Progressing").
					With(func(e *appsv1alpha1.ClusterCondition) { e.App = "legacy-app" })
				r := newReport("guestbook-app", appsv1alpha1.ReportSummary{Clusters: "1", Synced: "1", InProgress: "1", NotHealthy: "1"}, e)
				r.Statuses.Truncation = &appsv1alpha1.ReportTruncation{Message: "3 resources left out"}
				return []appsv1alpha1.MulticlusterApplicationSetReport{r}
			}(),
			want: "CLUSTER   APP          SYNC     HEALTH        AGENT   ERRORS\n" +
				"c1        legacy-app   Synced   Progressing   -       -\n" +
				"1 clusters: 1 synced, 0 healthy, 1 in progress (0 not synced, 1 not healthy)\n" +
				"Truncated: 3 resources left out\n",
		},
		"several reports of several namespaces: a column and a summary line each, sorted": {
			reports: func() []appsv1alpha1.MulticlusterApplicationSetReport {
				other := newReport("web", allSynced, builders.ClusterEntry("cluster1").Status("Synced", "Healthy").Agent(true))
				other.Namespace = "team-a"
				return []appsv1alpha1.MulticlusterApplicationSetReport{
					other, newReport("guestbook-app", allSynced, builders.ClusterEntry("cluster1").Status("Synced", "Healthy").Agent(true)),
				}
			}(),
			opts: Options{WithNamespace: true, WithApplicationSet: true},
			want: "NAMESPACE   APPLICATIONSET   CLUSTER    APP                      SYNC     HEALTH    AGENT       ERRORS\n" +
				"argocd      guestbook-app    cluster1   cluster1-guestbook-app   Synced   Healthy   available   -\n" +
				"team-a      web              cluster1   cluster1-guestbook-app   Synced   Healthy   available   -\n" +
				"argocd/guestbook-app: 2 clusters: 2 synced, 2 healthy, 0 in progress (0 not synced, 0 not healthy, 0 agents unavailable)\n" +
				"team-a/web: 2 clusters: 2 synced, 2 healthy, 0 in progress (0 not synced, 0 not healthy, 0 agents unavailable)\n",
		},
		"wide: operation, revisions, age of the report, delivery and failing resources": {
			reports: func() []appsv1alpha1.MulticlusterApplicationSetReport {
				e := builders.ClusterEntry("cluster1").Status("OutOfSync", "Degraded").Agent(true).With(func(e *appsv1alpha1.ClusterCondition) {
					e.OperationStatePhase, e.SyncRevision, e.Delivery = "Failed", "8f3c2b1", appsv1alpha1.DeliveryPull
					e.LastReportedAt = &metav1.Time{Time: now.Add(-90 * time.Second)}
					e.FailingResources = []appsv1alpha1.FailingResource{
						{Kind: "Deployment", Name: "guestbook-ui", SyncStatus: "Synced", HealthStatus: "Degraded"},
						{Kind: "Service", Name: "guestbook-ui", SyncStatus: "OutOfSync"},
					}
				})
				multi := builders.ClusterEntry("cluster2").Status("Synced", "Healthy").With(func(e *appsv1alpha1.ClusterCondition) {
					e.SyncRevision, e.SyncRevisions = "a1", []string{"a1", "b2"}
				})
				return []appsv1alpha1.MulticlusterApplicationSetReport{newReport("guestbook-app", allSynced, e, multi)}
			}(),
			opts: Options{Wide: true, Now: now},
			want: "CLUSTER    APP                      SYNC        HEALTH     AGENT       ERRORS   OPERATION   REVISION   REPORTED   DELIVERY   FAILING\n" +
				"cluster1   cluster1-guestbook-app   OutOfSync   Degraded   available   -        Failed      8f3c2b1    90s        Pull       Deployment/guestbook-ui Synced Degraded; Service/guestbook-ui OutOfSync\n" +
				"cluster2   cluster2-guestbook-app   Synced      Healthy    -           -        -           a1,b2      -          -          -\n" +
				"2 clusters: 2 synced, 2 healthy, 0 in progress (0 not synced, 0 not healthy, 0 agents unavailable)\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			if err := Write(&out, tc.reports, tc.opts); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("Write (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTableDoesNotChangeItsInput(t *testing.T) {
	reports := []appsv1alpha1.MulticlusterApplicationSetReport{
		newReport("b", allSynced, builders.ClusterEntry("cluster2").Status("Synced", "Healthy"), builders.ClusterEntry("cluster1").Status("Synced", "Healthy")),
		newReport("a", allSynced),
	}
	before := []appsv1alpha1.MulticlusterApplicationSetReport{*reports[0].DeepCopy(), *reports[1].DeepCopy()}
	Table(reports, Options{WithApplicationSet: true})
	if diff := cmp.Diff(before, reports); diff != "" {
		t.Errorf("Table changed its input (-before +after):\n%s", diff)
	}
}

func TestWideColumnsAreHiddenByDefault(t *testing.T) {
	table := Table(nil, Options{})
	var shown []string
	for _, c := range table.ColumnDefinitions {
		if c.Priority == 0 {
			shown = append(shown, c.Name)
		}
	}
	if diff := cmp.Diff([]string{"Cluster", "App", "Sync", "Health", "Agent", "Errors"}, shown); diff != "" {
		t.Errorf("columns without -o wide (-want +got):\n%s", diff)
	}
}

func TestErrorsTextShortensLongMessages(t *testing.T) {
	got := []rune(errorsText([]appsv1alpha1.Condition{{Type: "SyncError", Message: strings.Repeat("x", 2*MaxErrorText)}}))
	if len(got) != MaxErrorText || got[len(got)-1] != '…' {
		t.Errorf("errorsText of a long message: %d runes ending in %q, want %d ending in …", len(got), got[len(got)-1], MaxErrorText)
	}
}
