package pullmodel

import workv1 "open-cluster-management.io/api/work/v1"

// ManifestsLimit is the most bytes of manifests one ManifestWork may carry, summed over
// ManifestsSize: OCM's ManifestWork webhook refuses more (open-cluster-management.io/ocm
// v1.2.1, pkg/work/webhook/common/validator.go: ManifestValidator's limit, 500 * 1024;
// the webhook's --manifestLimit flag defaults to the same in pkg/work/webhook/option.go).
// A hub may raise it; whatever delivers a ManifestWork keeps to the default, so the work
// is accepted by every hub and a work too large is reported where the user looks rather
// than refused by the webhook.
const ManifestsLimit = 500 * 1024

// ManifestsSize is what OCM's webhook measures of manifests: the sum of each one's
// protobuf Size(), its raw bytes and a few bytes of framing.
func ManifestsSize(manifests []workv1.Manifest) int {
	n := 0
	for i := range manifests {
		n += manifests[i].Size()
	}
	return n
}
