package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
)

// The hub must tell "the cluster compared what the hub Application says" from "the hub
// Application changed and the cluster has not compared the change yet" without carrying the
// sources back: the agent reports a digest of the sources Argo CD compared
// (status.sync.comparedTo), the hub takes the same digest of its Application's spec. Argo CD
// itself refreshes an Application whose spec sources differ from comparedTo
// (currentSourceEqualsSyncedSource in its application controller); the digest is that
// comparison across the pull model.

// SpecSourcesDigest is the digest of the sources of spec, as Argo CD compares them: the
// list when the Application has several, else the one source. Empty without a source.
func SpecSourcesDigest(spec *argov1alpha1.ApplicationSpec) string {
	if spec.HasMultipleSources() {
		return sourcesDigest(spec.Sources)
	}
	if spec.Source == nil || spec.Source.IsZero() {
		return ""
	}
	return sourcesDigest(argov1alpha1.ApplicationSources{*spec.Source})
}

// ComparedSourcesDigest is the digest of the sources Argo CD last compared, in the form
// SpecSourcesDigest gives for the same spec. Empty before the first comparison.
func ComparedSourcesDigest(compared *argov1alpha1.ComparedTo) string {
	if len(compared.Sources) > 0 {
		return sourcesDigest(compared.Sources)
	}
	if compared.Source.IsZero() {
		return ""
	}
	return sourcesDigest(argov1alpha1.ApplicationSources{compared.Source})
}

// sourcesDigest is the hex SHA-256 of the sources' JSON. Both sides decode into the same
// Argo CD types before encoding, so equal sources give equal JSON (struct fields in
// declaration order, map keys sorted).
func sourcesDigest(sources argov1alpha1.ApplicationSources) string {
	data, err := json.Marshal(sources)
	if err != nil {
		// Argo CD's source types hold only strings, numbers, bools, slices and string-keyed
		// maps, which always encode.
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
