package agent

import (
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/internal/retry"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/reports"
)

// What the hub requests controller (requests.go) shares with the report controller: the
// Applications it serves are those reported, and it retries a failed write alike.
var pulledFromHub = reports.PulledFromHub

const (
	retryBaseDelay = retry.BaseDelay
	retryMaxDelay  = retry.MaxDelay
)
