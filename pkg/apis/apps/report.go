package apps

import (
	"strings"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/naming"
)

// ApplicationStatusReport labels. The agent sets them on every report it writes so hub
// readers can select reports with a label selector instead of listing and filtering.
// Label values are at most 63 characters: values that would be longer are shortened with
// ReportLabelValue, so compute a selector value with the same function.
const (
	// LabelReportManagedBy is set to ReportManagedByAgent on every report the agent
	// owns; the agent only lists, and only deletes, reports carrying it.
	LabelReportManagedBy = "app.kubernetes.io/managed-by"
	// ReportManagedByAgent is LabelReportManagedBy's value on the agent's reports.
	ReportManagedByAgent = "argocd-pull-agent"

	// LabelReportHubApplication selects the reports of one hub Application across all
	// cluster namespaces. Value: HubApplicationLabelValue(namespace, name).
	LabelReportHubApplication = "apps.open-cluster-management.io/report-hub-application"
	// LabelReportApplicationSet selects the reports of every Application one hub
	// ApplicationSet generated. Value: ApplicationSetLabelValue("<namespace>/<name>").
	// Absent on reports of standalone Applications.
	LabelReportApplicationSet = "apps.open-cluster-management.io/report-applicationset"
)

// ManagedClusterAddOn conditions the agent maintains on its own ManagedClusterAddOn
// (namespace = cluster, name = AddonName). Each is patched only when it changes.
const (
	// ConditionApplicationsWatched is True when the agent watches Argo CD Applications
	// in every namespace it was told to watch, and False with one of the reasons below
	// when Argo CD is not installed or a watched namespace does not exist. The agent
	// picks Applications up by itself once the cause is fixed.
	ConditionApplicationsWatched = "ApplicationsWatched"

	// ReasonApplicationsWatched: the CRD is installed and every watched namespace exists.
	// The message names the watched namespaces ("Watching Argo CD Applications in
	// namespaces argocd, team-a"); the hub quotes it when a delivered Application is
	// never reported.
	ReasonApplicationsWatched = "ApplicationsWatched"
	// ReasonArgoCDNotInstalled: the cluster has no applications.argoproj.io CRD (or it
	// is not established yet).
	ReasonArgoCDNotInstalled = "ArgoCDNotInstalled"
	// ReasonWatchedNamespaceMissing: at least one watched namespace does not exist; the
	// message lists them.
	ReasonWatchedNamespaceMissing = "WatchedNamespaceMissing"

	// ConditionResourceHealthPersisted says whether the cluster's Argo CD keeps each
	// resource's health in its Applications, so that reports carry it. The agent decides
	// from the pulled Applications Argo CD has reconciled (status.resourceHealthSource)
	// and sets it once there is one; until then it is absent.
	ConditionResourceHealthPersisted = "ResourceHealthPersisted"

	// ReasonResourceHealthPersisted: every reconciled pulled Application holds its
	// resources' health.
	ReasonResourceHealthPersisted = "ResourceHealthPersisted"
	// ReasonResourceHealthInResourceTree: at least one reconciled pulled Application says
	// resourceHealthSource: appTree (Argo CD 3's default, controller.resource.health.persist
	// "false"): its report has no per-resource health. The message names the application
	// controllers' namespaces and how to turn persistence on.
	ReasonResourceHealthInResourceTree = "ResourceHealthInResourceTree"

	// ConditionResourceTreeReadable says whether the agent reads Argo CD's resource tree
	// (per-resource health and children, kept in Argo CD's Redis) for the pulled
	// Applications whose health is not in the Application. Absent while no Application
	// needs it.
	ConditionResourceTreeReadable = "ResourceTreeReadable"

	// ReasonResourceTreeRead: the last read of every Application's tree succeeded.
	ReasonResourceTreeRead = "ResourceTreeRead"
	// ReasonResourceTreeUnreadable: the agent could not read a tree (Redis unreachable,
	// credentials refused, the Secret not readable); the message carries the underlying
	// error. Reports are still written, without per-resource health.
	ReasonResourceTreeUnreadable = "ResourceTreeUnreadable"
)

// maxLabelValueLength is Kubernetes' limit on a label value.
const maxLabelValueLength = 63

// labelHashLength is how many hex characters of the SHA-256 a shortened value keeps:
// 64 bits, enough that distinct Applications of one fleet never share a value.
const labelHashLength = 16

// HubApplicationLabelValue is LabelReportHubApplication's value for the hub Application
// namespace/name. A namespace holds no dot, so "<namespace>.<name>" is unambiguous.
func HubApplicationLabelValue(namespace, name string) string {
	return ReportLabelValue(namespace + "." + name)
}

// ApplicationSetLabelValue is LabelReportApplicationSet's value for an ApplicationSet
// written "<namespace>/<name>" (AnnotationHostingApplicationSet's form). A slash is not
// allowed in a label value; it becomes a dot, which a namespace never contains.
func ApplicationSetLabelValue(namespacedName string) string {
	return ReportLabelValue(strings.Replace(namespacedName, "/", ".", 1))
}

// ReportLabelValue makes s a valid label value: s itself when it is one, otherwise its
// label-safe prefix followed by "-" and a hash of all of s, 63 characters at most.
func ReportLabelValue(s string) string {
	if len(s) <= maxLabelValueLength && validLabelValue(s) {
		return s
	}
	safe := strings.Map(func(r rune) rune {
		if isLabelValueChar(r) {
			return r
		}
		return '_'
	}, s)
	return naming.WithHash(safe, s, maxLabelValueLength, labelHashLength)
}

func validLabelValue(s string) bool {
	if s == "" {
		return true
	}
	for _, r := range s {
		if !isLabelValueChar(r) {
			return false
		}
	}
	return isAlphanumeric(rune(s[0])) && isAlphanumeric(rune(s[len(s)-1]))
}

func isLabelValueChar(r rune) bool {
	return isAlphanumeric(r) || r == '-' || r == '_' || r == '.'
}

func isAlphanumeric(r rune) bool {
	return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
}
