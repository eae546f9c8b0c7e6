// Package manifests holds the argocd-pull agent's Helm chart, embedded into the binary.
// The addon manager (pkg/hub/addon) renders it through the addon-framework factory once per
// enabled managed cluster and ships the result to the cluster in a ManifestWork.
package manifests

import "embed"

// AgentChartDir is the agent chart's directory inside AgentChartFS.
const AgentChartDir = "charts/argocd-pull-agent"

// AgentChartFS holds the agent chart. The all: prefix keeps _helpers.tpl, which go:embed
// skips by default because of its leading underscore.
//
//go:embed all:charts/argocd-pull-agent
var AgentChartFS embed.FS
