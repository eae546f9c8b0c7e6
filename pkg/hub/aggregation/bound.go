package aggregation

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/report"
)

// Level is one set of bounds on a report's lists and messages.
type Level struct {
	// Resources bounds statuses.resources, the union across clusters.
	Resources int
	// Conditions bounds the conditions of one cluster entry.
	Conditions int
	// MessageLength bounds a condition message, in characters; 0 drops messages.
	MessageLength int
	// FailingResources bounds the failing resources of one cluster entry, and its
	// not-healthy children.
	FailingResources int
	// FailingMessageLength bounds a failing resource's message; 0 drops them.
	FailingMessageLength int
	// Terse leaves agentAvailable (when true), delivery (when Pull) and lastReportedAt out
	// of entries: with TerseFine only out of entries that need no attention (see
	// attention), with TerseAll out of every entry.
	Terse Terseness
}

// Terseness says which cluster entries leave out agentAvailable (when true), delivery
// (when Pull) and lastReportedAt.
type Terseness int

// Tersenesses, from none to all entries.
const (
	TerseNone Terseness = iota
	TerseFine
	TerseAll
)

// Limits bound the size of a report. The first level always applies; each further level
// applies only when the report's JSON is still larger than Budget. When even the last
// level does not fit, whole cluster entries are left out, healthy and synced ones first.
// The summary always counts every cluster.
type Limits struct {
	// ListAllUpTo is how many entries a report lists in full; beyond, it lists only those
	// that need attention (see Unlist). 0 lists every entry.
	ListAllUpTo int
	// Budget is the largest JSON size of statuses, in bytes.
	Budget int
	// Levels go from generous to terse.
	Levels []Level
}

// DefaultLimits keep a report under 1 MiB with 24 KiB left for metadata. An entry with
// only the established fields takes about 330 bytes with typical names, so 3,000 clusters
// keep one entry each even when all fail (the last level); with a tenth of them failing
// with the largest agent reports, each failing entry keeps the type of its first error,
// agentAvailable and lastReportedAt (the fourth level).
var DefaultLimits = Limits{
	ListAllUpTo: appsv1alpha1.ListAllEntriesUpTo,
	Budget:      1000 << 10,
	Levels: []Level{
		{Resources: 1000, Conditions: 10, MessageLength: 512, FailingResources: 5, FailingMessageLength: 128},
		{Resources: 200, Conditions: 3, MessageLength: 160, FailingResources: 2, Terse: TerseFine},
		{Resources: 50, Conditions: 1, MessageLength: 80, FailingResources: 1, Terse: TerseFine},
		{Resources: 20, Conditions: 1, Terse: TerseFine},
		{Conditions: 1, Terse: TerseAll},
		{Terse: TerseAll},
	},
}

// truncationCounts counts what bounding left out.
type truncationCounts struct {
	resources, conditions, failing, entries, terseEntries, messages int32
	// unlisted is what Unlist left out before the report was bounded, of a report of more
	// than listAllUpTo entries.
	unlisted    int32
	listAllUpTo int
	// agentResources is what the agents' reports left out before the report was built.
	agentResources int32
}

// Bound returns the report within limits, with statuses.truncation saying what was left
// out. It does not change in.
func Bound(in appsv1alpha1.AppConditions, limits Limits) appsv1alpha1.AppConditions {
	var (
		out    appsv1alpha1.AppConditions
		counts truncationCounts
	)
	for i, level := range limits.Levels {
		out, counts = applyLevel(in, level)
		if i == len(limits.Levels)-1 || jsonSize(out) <= limits.Budget {
			break
		}
	}
	if limits.Budget > 0 && jsonSize(out) > limits.Budget {
		out.ClusterConditions, counts.entries = dropEntries(out.ClusterConditions, limits.Budget-jsonSize(appsv1alpha1.AppConditions{Resources: out.Resources, Summary: out.Summary}))
	}
	if in.Truncation != nil {
		counts.agentResources = in.Truncation.AgentOmittedResources
		counts.unlisted = in.Truncation.UnlistedClusterConditions
	}
	counts.listAllUpTo = limits.ListAllUpTo
	out.Truncation = counts.truncation()
	return out
}

func applyLevel(in appsv1alpha1.AppConditions, level Level) (appsv1alpha1.AppConditions, truncationCounts) {
	var counts truncationCounts
	out := appsv1alpha1.AppConditions{Summary: in.Summary}
	out.Resources = in.Resources
	if len(out.Resources) > level.Resources {
		counts.resources = int32(len(out.Resources) - level.Resources)
		out.Resources = out.Resources[:level.Resources:level.Resources]
	}
	if len(in.ClusterConditions) > 0 {
		out.ClusterConditions = make([]appsv1alpha1.ClusterCondition, len(in.ClusterConditions))
	}
	for i := range in.ClusterConditions {
		e := in.ClusterConditions[i] // shallow copy; the lists below are rebuilt, not changed
		e.Conditions = keepFirst(e.Conditions, level.Conditions, &counts.conditions, func(c *appsv1alpha1.Condition) {
			c.Message = counts.shorten(c.Message, level.MessageLength)
		})
		shortenFailing := func(f *appsv1alpha1.FailingResource) {
			f.Message = counts.shorten(f.Message, level.FailingMessageLength)
		}
		e.FailingResources = keepFirst(e.FailingResources, level.FailingResources, &counts.failing, shortenFailing)
		e.NotHealthyChildren = keepFirst(e.NotHealthyChildren, level.FailingResources, &counts.failing, shortenFailing)
		if level.Terse == TerseAll || (level.Terse == TerseFine && attention(e) == 0) {
			if e.LastReportedAt != nil || (e.AgentAvailable != nil && *e.AgentAvailable) || e.Delivery == appsv1alpha1.DeliveryPull {
				counts.terseEntries++
			}
			e.LastReportedAt = nil
			if e.AgentAvailable != nil && *e.AgentAvailable {
				e.AgentAvailable = nil
			}
			// Unset means Pull (the API says so); HubRendered stays, a reader needs it to
			// know there is no agent.
			if e.Delivery == appsv1alpha1.DeliveryPull {
				e.Delivery = ""
			}
		}
		out.ClusterConditions[i] = e
	}
	return out, counts
}

// dropEntries leaves out whole entries until the rest fit in budget bytes: first the
// ones that need no attention (see attention; the summary still counts them), then
// others from the end. The kept entries keep their order.
func dropEntries(entries []appsv1alpha1.ClusterCondition, budget int) ([]appsv1alpha1.ClusterCondition, int32) {
	sizes := make([]int, len(entries))
	total := 0
	for i := range entries {
		sizes[i] = jsonSize(entries[i]) + 1 // and a comma
		total += sizes[i]
	}
	order := make([]int, len(entries))
	for i := range order {
		order[i] = i
	}
	// Drop order: fine entries first, then the later ones first within each group.
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(attention(entries[a]), attention(entries[b])), cmp.Compare(b, a))
	})
	dropped := make([]bool, len(entries))
	var n int32
	for _, i := range order {
		if total <= budget {
			break
		}
		dropped[i] = true
		total -= sizes[i]
		n++
	}
	kept := make([]appsv1alpha1.ClusterCondition, 0, len(entries)-int(n))
	for i := range entries {
		if !dropped[i] {
			kept = append(kept, entries[i])
		}
	}
	return kept, n
}

// attention is 0 for an entry that needs none (healthy, synced, and its agent available
// or, delivered hub-rendered, no agent needed), 1 else.
func attention(e appsv1alpha1.ClusterCondition) int {
	agentFine := (e.AgentAvailable != nil && *e.AgentAvailable) || e.Delivery == appsv1alpha1.DeliveryHubRendered
	if e.HealthStatus == string(appsv1alpha1.HealthStatusHealthy) && e.SyncStatus == string(appsv1alpha1.SyncStatusSynced) && agentFine {
		return 0
	}
	return 1
}

// shorten cuts a message to max characters (report.Shorten) and counts it when it cut.
// keepFirst returns a new list of in's first limit items, each passed through edit (on
// a copy: in is shared with the unbounded report), and adds how many it left out to
// *omitted. Nil when in is empty, as the JSON field is omitted then.
func keepFirst[T any](in []T, limit int, omitted *int32, edit func(*T)) []T {
	var out []T
	for j, item := range in {
		if j == limit {
			*omitted += int32(len(in) - j)
			break
		}
		edit(&item)
		out = append(out, item)
	}
	return out
}

func (c *truncationCounts) shorten(s string, max int) string {
	cut, ok := report.Shorten(s, max)
	if ok {
		c.messages++
	}
	return cut
}

func (c truncationCounts) truncation() *appsv1alpha1.ReportTruncation {
	if c == (truncationCounts{listAllUpTo: c.listAllUpTo}) {
		return nil
	}
	var parts []string
	for _, p := range []struct {
		n    int32
		what string
	}{
		{c.resources, "resources"}, {c.conditions, "conditions"}, {c.failing, "failing resources and children"}, {c.entries, "cluster entries"},
	} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	var actions []string
	if len(parts) > 0 {
		actions = append(actions, "left out "+strings.Join(parts, ", "))
	}
	if c.messages > 0 {
		actions = append(actions, fmt.Sprintf("shortened %d messages", c.messages))
	}
	if c.terseEntries > 0 {
		actions = append(actions, fmt.Sprintf("wrote %d cluster entries without lastReportedAt, agentAvailable: true and delivery: Pull", c.terseEntries))
	}
	var sentences []string
	if len(actions) > 0 {
		sentences = append(sentences, "To stay under its size bound the report "+strings.Join(actions, "; ")+
			". The summary counts every cluster; the agents' ApplicationStatusReports in each cluster namespace have the details.")
	}
	if c.unlisted > 0 {
		sentences = append(sentences, fmt.Sprintf("%d cluster entries that need no attention (Healthy, Synced, agent available, "+
			"no conditions) are not listed, as the ApplicationSet has more than %d; the summary counts them, and each one's "+
			"detail is its cluster's ApplicationStatusReport: kubectl get applicationstatusreports -A -l %s=<this report's %s label>.",
			c.unlisted, c.listAllUpTo, apps.LabelReportApplicationSet, appsv1alpha1.LabelHostingApplicationSet))
	}
	if c.agentResources > 0 {
		sentences = append(sentences, fmt.Sprintf("The agents' reports left out %d resources (at most %d per Application and cluster), "+
			"so statuses.resources can miss up to that many; each ApplicationStatusReport's status.truncation says which cluster's.",
			c.agentResources, appsv1alpha1.MaxResources))
	}
	msg := strings.Join(sentences, " ")
	return &appsv1alpha1.ReportTruncation{
		AgentOmittedResources:     c.agentResources,
		OmittedResources:          c.resources,
		OmittedConditions:         c.conditions,
		OmittedFailingResources:   c.failing,
		OmittedClusterConditions:  c.entries,
		UnlistedClusterConditions: c.unlisted,
		ShortenedMessages:         c.messages,
		TerseClusterConditions:    c.terseEntries,
		Message:                   msg,
	}
}

// jsonSize is the size of v's JSON; a value that does not marshal counts as huge, so it
// gets bounded rather than written.
func jsonSize(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return int(^uint(0) >> 1)
	}
	return len(b)
}
