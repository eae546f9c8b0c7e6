package builders

import (
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// ClusterEntryBuilder builds a cluster's entry of a MulticlusterApplicationSetReport.
// Build returns a copy.
type ClusterEntryBuilder struct {
	e appsv1alpha1.ClusterCondition
}

// ClusterEntry starts the entry of cluster's guestbook Application, with nothing reported yet.
func ClusterEntry(cluster string) *ClusterEntryBuilder {
	return &ClusterEntryBuilder{e: appsv1alpha1.ClusterCondition{
		Cluster: cluster,
		App:     "argocd/" + cluster + "-guestbook-app/" + cluster + "/" + cluster + "-guestbook-app-abcde",
	}}
}

// Build returns the entry built so far.
func (b *ClusterEntryBuilder) Build() appsv1alpha1.ClusterCondition {
	return *b.e.DeepCopy()
}

// Status sets the sync and health status.
func (b *ClusterEntryBuilder) Status(sync, health string) *ClusterEntryBuilder {
	b.e.SyncStatus, b.e.HealthStatus = sync, health
	return b
}

// Agent says whether the cluster's agent is available.
func (b *ClusterEntryBuilder) Agent(available bool) *ClusterEntryBuilder {
	b.e.AgentAvailable = &available
	return b
}

// Condition adds a condition of the entry.
func (b *ClusterEntryBuilder) Condition(conditionType, message string) *ClusterEntryBuilder {
	b.e.Conditions = append(b.e.Conditions, appsv1alpha1.Condition{Type: conditionType, Message: message})
	return b
}

// With changes the entry with edit, for the fields no other method sets.
func (b *ClusterEntryBuilder) With(edit func(*appsv1alpha1.ClusterCondition)) *ClusterEntryBuilder {
	edit(&b.e)
	return b
}
