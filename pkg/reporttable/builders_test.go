package reporttable

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// entry builds a cluster entry of the guestbook's report.
type entry appsv1alpha1.ClusterCondition

func newEntry(cluster string) *entry {
	return &entry{Cluster: cluster, App: "argocd/" + cluster + "-guestbook-app/" + cluster + "/" + cluster + "-guestbook-app-abcde"}
}

func (e *entry) status(sync, health string) *entry {
	e.SyncStatus, e.HealthStatus = sync, health
	return e
}

func (e *entry) agent(available bool) *entry {
	e.AgentAvailable = &available
	return e
}

func (e *entry) condition(typ, message string) *entry {
	e.Conditions = append(e.Conditions, appsv1alpha1.Condition{Type: typ, Message: message})
	return e
}

func (e *entry) obj() appsv1alpha1.ClusterCondition { return appsv1alpha1.ClusterCondition(*e) }

// newReport is the report of ApplicationSet argocd/name.
func newReport(name string, summary appsv1alpha1.ReportSummary, entries ...*entry) appsv1alpha1.MulticlusterApplicationSetReport {
	r := appsv1alpha1.MulticlusterApplicationSetReport{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: name}}
	r.Statuses.Summary = summary
	for _, e := range entries {
		r.Statuses.ClusterConditions = append(r.Statuses.ClusterConditions, e.obj())
	}
	return r
}
