// Package chart_test checks the hub chart without an API server: Helm's linter and the
// values schema, the standard labels, what values render, and that its version changes
// with its CRDs and RBAC. test/integration/chart and test/integration/chartlifecycle install it.
package chart_test

import (
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// kubeVersion is the Kubernetes of the test API servers (bin/envtest), which the linter
// renders the templates for and checks Chart.yaml's kubeVersion against.
var kubeVersion = &chartutil.KubeVersion{Version: "v1.34.3", Major: "1", Minor: "34"}

func chartDir(t *testing.T) string {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "charts", framework.ChartName)
}

// lintMessages runs Helm's linter (what `helm lint` runs) with values over the chart's
// and returns its warnings and errors.
func lintMessages(t *testing.T, values map[string]any) []support.Message {
	t.Helper()
	linter := lint.AllWithKubeVersion(chartDir(t), values, framework.ChartNamespace, kubeVersion)
	var out []support.Message
	for _, m := range linter.Messages {
		if m.Severity >= support.WarningSev {
			out = append(out, m)
		}
	}
	return out
}

func TestChartPassesHelmLint(t *testing.T) {
	if msgs := lintMessages(t, nil); len(msgs) > 0 {
		t.Fatalf("helm lint: %v", msgs)
	}
	// Every optional part rendered too.
	if msgs := lintMessages(t, everythingEnabled()); len(msgs) > 0 {
		t.Fatalf("helm lint with every option on: %v", msgs)
	}
}

func TestSchemaAcceptsTheValuesOthersSet(t *testing.T) {
	for name, values := range map[string]map[string]any{
		"imagePullSecrets": {"imagePullSecrets": []any{map[string]any{"name": "regcred"}}},
		"a ServiceMonitor verifying the manager's certificate": {"metrics": map[string]any{
			"serviceMonitor": map[string]any{"enabled": true, "interval": "1m30s", "scrapeTimeout": "10s",
				"authorization": map[string]any{"credentials": map[string]any{"name": "prometheus-token", "key": "token"}},
				"tlsConfig": map[string]any{"ca": map[string]any{"configMap": map[string]any{"name": "openshift-service-ca.crt", "key": "service-ca.crt"}},
					"minVersion": "TLS12"}},
			"servingCertificate": map[string]any{"secretName": "argocd-pull-metrics-tls"}}},
		"alerts with thresholds of one's own": {"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true,
			"for": "30m", "propagationLatencySeconds": 120, "reportQuotaRatio": 0.9, "ruleLabels": map[string]any{"team": "platform"}}}},
		"tenant roles off":           {"tenantRoles": map[string]any{"enabled": false}},
		"crds managed elsewhere":     {"crds": map[string]any{"install": false, "keep": false}},
		"an existing ServiceAccount": {"serviceAccount": map[string]any{"create": false, "name": "hub-sa"}},
		"memory in decimal units":    {"manager": map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": "1500M"}}}},
	} {
		t.Run(name, func(t *testing.T) {
			if msgs := lintMessages(t, values); len(msgs) > 0 {
				t.Fatalf("refused: %v", msgs)
			}
		})
	}
}

func TestSchemaRefusesBadValues(t *testing.T) {
	for name, tc := range map[string]struct {
		values map[string]any
		want   string // in the linter's error
	}{
		"crds.install not a boolean":        {map[string]any{"crds": map[string]any{"install": "yes"}}, "/crds/install"},
		"misspelt top-level value":          {map[string]any{"manger": map[string]any{"replicas": 2}}, "manger"},
		"misspelt manager value":            {map[string]any{"manager": map[string]any{"replica": 2}}, "replica"},
		"imagePullSecrets as plain strings": {map[string]any{"imagePullSecrets": []any{"regcred"}}, "/imagePullSecrets/0"},
		"imagePullSecret without a name":    {map[string]any{"imagePullSecrets": []any{map[string]any{}}}, "name"},
		"serviceMonitor.enabled a string": {map[string]any{"metrics": map[string]any{
			"serviceMonitor": map[string]any{"enabled": "true"}}}, "/metrics/serviceMonitor/enabled"},
		"unknown metrics value": {map[string]any{"metrics": map[string]any{"port": 8080}}, "port"},
		"unknown serviceMonitor value": {map[string]any{"metrics": map[string]any{
			"serviceMonitor": map[string]any{"bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token"}}}, "bearerTokenFile"},
		"unknown tlsConfig value": {map[string]any{"metrics": map[string]any{
			"serviceMonitor": map[string]any{"tlsConfig": map[string]any{"caFile": "/etc/ca.crt"}}}}, "caFile"},
		"authorization credentials without a key": {map[string]any{"metrics": map[string]any{
			"serviceMonitor": map[string]any{"authorization": map[string]any{"credentials": map[string]any{"name": "t", "key": ""}}}}},
			"/metrics/serviceMonitor/authorization/credentials/key"},
		"unknown prometheusRule value": {map[string]any{"metrics": map[string]any{
			"prometheusRule": map[string]any{"severity": "critical"}}}, "severity"},
		"prometheusRule.for not a duration": {map[string]any{"metrics": map[string]any{
			"prometheusRule": map[string]any{"for": "15 minutes"}}}, "/metrics/prometheusRule/for"},
		"report quota ratio above 1": {map[string]any{"metrics": map[string]any{
			"prometheusRule": map[string]any{"reportQuotaRatio": 80}}}, "/metrics/prometheusRule/reportQuotaRatio"},
		"unknown reader value": {map[string]any{"metrics": map[string]any{
			"reader": map[string]any{"serviceAccountName": "prometheus"}}}, "serviceAccountName"},
		"unknown tenantRoles value": {map[string]any{"tenantRoles": map[string]any{"view": true}}, "view"},
		"memory limit not a quantity": {map[string]any{"manager": map[string]any{
			"resources": map[string]any{"limits": map[string]any{"memory": "1GB"}}}}, "/manager/resources/limits/memory"},
		"unknown install strategy": {map[string]any{"addon": map[string]any{
			"installStrategy": map[string]any{"type": "All"}}}, "/addon/installStrategy/type"},
		"unknown logging format": {map[string]any{"manager": map[string]any{"loggingFormat": "logfmt"}}, "/manager/loggingFormat"},
	} {
		t.Run(name, func(t *testing.T) {
			msgs := lintMessages(t, tc.values)
			var errs []string
			for _, m := range msgs {
				if m.Severity == support.ErrorSev {
					errs = append(errs, m.Error())
				}
			}
			if !strings.Contains(strings.Join(errs, "\n"), tc.want) {
				t.Fatalf("want a lint error naming %q, got %v", tc.want, msgs)
			}
		})
	}
}
