package report

import "github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/naming"

// maxReportNameLength is Kubernetes' limit on an object name (a DNS subdomain).
const maxReportNameLength = 253

// nameHashLength is how many hex characters of the SHA-256 a shortened name keeps.
const nameHashLength = 16

// ReportName is the name of the ApplicationStatusReport of the Application
// namespace/name on the managed cluster: "<namespace>.<name>". A namespace holds no dot,
// so two Applications never share a name. A name longer than an object name may be
// keeps a prefix and ends with a hash of the full "<namespace>.<name>".
func ReportName(namespace, name string) string {
	return naming.Bounded(namespace+"."+name, maxReportNameLength, nameHashLength)
}
