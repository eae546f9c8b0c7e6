package pullmodel

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
)

// TestManifestsSize measures as OCM's webhook does: the raw bytes plus, per manifest, a
// tag byte and the length as a varint.
func TestManifestsSize(t *testing.T) {
	manifest := func(n int) workv1.Manifest {
		return workv1.Manifest{RawExtension: runtime.RawExtension{Raw: make([]byte, n)}}
	}
	tests := map[string]struct {
		manifests []workv1.Manifest
		want      int
	}{
		"none":                     {},
		"one small":                {manifests: []workv1.Manifest{manifest(100)}, want: 1 + 100 + 1},
		"two, a two-byte length":   {manifests: []workv1.Manifest{manifest(100), manifest(200)}, want: 102 + 1 + 200 + 2},
		"at the limit's magnitude": {manifests: []workv1.Manifest{manifest(ManifestsLimit)}, want: 1 + ManifestsLimit + 3},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := ManifestsSize(tc.manifests); got != tc.want {
				t.Errorf("ManifestsSize() = %d, want %d", got, tc.want)
			}
		})
	}
}
