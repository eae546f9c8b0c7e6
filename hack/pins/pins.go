//go:build pins

// Package pins keeps in go.mod the OCM modules that DESIGN §7 verified to build together
// but that no package imports yet: sdk-go, and ocm's work hub (ManifestWorkReplicaSet, which
// test/fleet does not start). The build tag keeps it out of every build; `go mod tidy`
// still sees the imports.
package pins

import (
	_ "open-cluster-management.io/ocm/pkg/work/hub"
	_ "open-cluster-management.io/sdk-go/pkg/patcher"
)
