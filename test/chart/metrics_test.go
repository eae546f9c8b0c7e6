package chart_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// securedServiceMonitor are the serviceMonitor values a secure-metrics install needs: the
// token's Secret and, knowingly, no verification of the self-signed certificate.
func securedServiceMonitor() map[string]any {
	return map[string]any{"enabled": true,
		"authorization": map[string]any{"credentials": map[string]any{"name": "prometheus-token", "key": "token"}},
		"tlsConfig":     map[string]any{"insecureSkipVerify": true}}
}

func metricsValues(metrics map[string]any) map[string]any {
	return map[string]any{"metrics": metrics}
}

// endpoint is the ServiceMonitor's only endpoint.
func endpoint(t *testing.T, objs []*unstructured.Unstructured) map[string]any {
	t.Helper()
	eps, _, _ := unstructured.NestedSlice(find(t, objs, "ServiceMonitor", "-manager").Object, "spec", "endpoints")
	if len(eps) != 1 {
		t.Fatalf("endpoints %v, want one", eps)
	}
	return eps[0].(map[string]any)
}

func TestNoRenderedDocumentRepeatsAKey(t *testing.T) {
	_, files := render(t, everythingEnabled())
	for name, content := range files {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for _, doc := range strings.Split(content, "\n---") {
			var out map[string]any
			// Strict decoding refuses a mapping that holds a key twice, which a lenient
			// decoder (and the API server) resolves silently to the last one.
			if err := yaml.UnmarshalStrict([]byte(doc), &out); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
}

func TestServiceMonitorAuthenticatesWithATokenFromASecret(t *testing.T) {
	objs, _ := render(t, metricsValues(map[string]any{"serviceMonitor": securedServiceMonitor()}))
	ep := endpoint(t, objs)
	if ep["scheme"] != "https" {
		t.Errorf("scheme %v, want https with security.secureMetrics", ep["scheme"])
	}
	if _, found := ep["bearerTokenFile"]; found {
		t.Errorf("bearerTokenFile rendered: %v", ep)
	}
	auth, _, _ := unstructured.NestedMap(ep, "authorization")
	if auth["type"] != "Bearer" || auth["credentials"].(map[string]any)["name"] != "prometheus-token" ||
		auth["credentials"].(map[string]any)["key"] != "token" {
		t.Errorf("authorization %v, want Bearer from Secret prometheus-token, key token", auth)
	}
	tls, _, _ := unstructured.NestedMap(ep, "tlsConfig")
	if len(tls) != 1 || tls["insecureSkipVerify"] != true {
		t.Errorf("tlsConfig %v, want only the insecureSkipVerify chosen", tls)
	}

	sm := find(t, objs, "ServiceMonitor", "-manager")
	selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	svc := find(t, objs, "Service", "-manager-metrics")
	for k, v := range selector {
		if svc.GetLabels()[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s, the metrics Service has %v", k, v, svc.GetLabels())
		}
	}
	if selector["app.kubernetes.io/component"] != "manager-metrics" {
		t.Errorf("selector %v does not single out the metrics Service", selector)
	}
}

func TestServiceMonitorVerifiesTheServingCertificateWithACA(t *testing.T) {
	ca := map[string]any{"secret": map[string]any{"name": "argocd-pull-metrics-tls", "key": "ca.crt"}}
	sm := securedServiceMonitor()
	sm["tlsConfig"] = map[string]any{"ca": ca}
	objs, _ := render(t, metricsValues(map[string]any{"serviceMonitor": sm,
		"servingCertificate": map[string]any{"secretName": "argocd-pull-metrics-tls"}}))
	tls, _, _ := unstructured.NestedMap(endpoint(t, objs), "tlsConfig")
	want := framework.ChartName + "-manager-metrics." + framework.ChartNamespace + ".svc"
	if tls["serverName"] != want || tls["insecureSkipVerify"] != nil || tls["ca"] == nil {
		t.Errorf("tlsConfig %v, want the CA and serverName %s, no insecureSkipVerify", tls, want)
	}

	// The manager serves the Secret's certificate.
	d := find(t, objs, "Deployment", "-manager")
	c, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(c[0].(map[string]any), "args")
	mounts, _, _ := unstructured.NestedSlice(c[0].(map[string]any), "volumeMounts")
	volumes, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
	if !slices.Contains(args, "--metrics-cert-dir=/etc/argocd-pull/metrics-tls") || len(mounts) != 1 ||
		mounts[0].(map[string]any)["mountPath"] != "/etc/argocd-pull/metrics-tls" || len(volumes) != 1 ||
		volumes[0].(map[string]any)["secret"].(map[string]any)["secretName"] != "argocd-pull-metrics-tls" {
		t.Errorf("args %v, mounts %v, volumes %v", args, mounts, volumes)
	}

	// Without servingCertificate the manager keeps its self-signed certificate.
	objs, _ = render(t, nil)
	c, _, _ = unstructured.NestedSlice(find(t, objs, "Deployment", "-manager").Object, "spec", "template", "spec", "containers")
	args, _, _ = unstructured.NestedStringSlice(c[0].(map[string]any), "args")
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--metrics-cert-dir") }) {
		t.Errorf("args %v by default", args)
	}
}

func TestServiceMonitorRefusesToGuessHowToAuthenticate(t *testing.T) {
	for name, tc := range map[string]struct {
		serviceMonitor map[string]any
		want           string
	}{
		"no token Secret": {map[string]any{"enabled": true, "tlsConfig": map[string]any{"insecureSkipVerify": true}},
			"metrics.serviceMonitor.authorization.credentials.name"},
		"neither a CA nor insecureSkipVerify": {map[string]any{"enabled": true,
			"authorization": map[string]any{"credentials": map[string]any{"name": "prometheus-token", "key": "token"}}},
			"metrics.serviceMonitor.tlsConfig"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := framework.RenderFiles(loadChart(t), framework.ChartNamespace, metricsValues(map[string]any{"serviceMonitor": tc.serviceMonitor}))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("rendering: %v, want an error naming %s", err, tc.want)
			}
		})
	}
	t.Run("plain HTTP needs neither", func(t *testing.T) {
		objs, _ := render(t, map[string]any{"security": map[string]any{"secureMetrics": false},
			"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}}})
		ep := endpoint(t, objs)
		if ep["scheme"] != "http" || ep["authorization"] != nil || ep["tlsConfig"] != nil {
			t.Errorf("endpoint %v, want plain http", ep)
		}
	})
}

func TestTheMetricsReaderIsBoundOnlyToTheNamedServiceAccount(t *testing.T) {
	bindingOf := func(objs []*unstructured.Unstructured) *unstructured.Unstructured {
		for _, o := range objs {
			if o.GetKind() == "ClusterRoleBinding" && o.GetName() == framework.ChartName+"-metrics-reader" {
				return o
			}
		}
		return nil
	}
	objs, _ := render(t, nil)
	if b := bindingOf(objs); b != nil {
		t.Errorf("binding rendered without metrics.reader.serviceAccount: %v", b.Object)
	}
	for name, tc := range map[string]struct {
		namespace, want string
	}{
		"in its namespace":            {"monitoring", "monitoring"},
		"in the release's by default": {"", framework.ChartNamespace},
	} {
		t.Run(name, func(t *testing.T) {
			objs, _ := render(t, metricsValues(map[string]any{"reader": map[string]any{
				"serviceAccount": map[string]any{"name": "prometheus", "namespace": tc.namespace}}}))
			b := bindingOf(objs)
			if b == nil {
				t.Fatal("no metrics-reader ClusterRoleBinding")
			}
			ref, _, _ := unstructured.NestedStringMap(b.Object, "roleRef")
			subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
			if ref["kind"] != "ClusterRole" || ref["name"] != framework.ChartName+"-metrics-reader" || len(subjects) != 1 {
				t.Fatalf("roleRef %v, subjects %v", ref, subjects)
			}
			s := subjects[0].(map[string]any)
			if s["kind"] != "ServiceAccount" || s["name"] != "prometheus" || s["namespace"] != tc.want {
				t.Errorf("subject %v, want ServiceAccount %s/prometheus", s, tc.want)
			}
		})
	}
}

// alerts are the PrometheusRule's alerts, by name, with their rule.
func alerts(t *testing.T, objs []*unstructured.Unstructured) map[string]map[string]any {
	t.Helper()
	groups, _, _ := unstructured.NestedSlice(find(t, objs, "PrometheusRule", "-manager").Object, "spec", "groups")
	out := map[string]map[string]any{}
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			out[r.(map[string]any)["alert"].(string)] = r.(map[string]any)
		}
	}
	return out
}

func TestPrometheusRuleHasTheAlertsWithTheirThresholds(t *testing.T) {
	objs, _ := render(t, nil)
	for _, o := range objs {
		if o.GetKind() == "PrometheusRule" {
			t.Fatalf("PrometheusRule %s rendered by default", o.GetName())
		}
	}
	objs, _ = render(t, metricsValues(map[string]any{"prometheusRule": map[string]any{"enabled": true,
		"for": "30m", "propagationLatencySeconds": 120, "reportQuotaRatio": 0.9,
		"ruleLabels": map[string]any{"team": "platform"}, "additionalLabels": map[string]any{"release": "kube-prometheus-stack"}}}))
	if l := find(t, objs, "PrometheusRule", "-manager").GetLabels(); l["release"] != "kube-prometheus-stack" {
		t.Errorf("labels %v", l)
	}
	got := alerts(t, objs)
	names := make([]string, 0, len(got))
	for n := range got {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{"ArgoCDPullAgentUnavailable", "ArgoCDPullDeliveryHeld", "ArgoCDPullPropagationLatencyHigh",
		"ArgoCDPullReportQuotaNearFull", "ArgoCDPullReportsStale"}
	if !slices.Equal(names, want) {
		t.Fatalf("alerts %v, want %v", names, want)
	}
	namespace := regexp.MustCompile(`\{namespace="` + framework.ChartNamespace + `"`)
	for name, rule := range got {
		labels := rule["labels"].(map[string]any)
		if rule["for"] != "30m" || labels["team"] != "platform" || labels["severity"] != "warning" {
			t.Errorf("%s: for %v, labels %v", name, rule["for"], labels)
		}
		if !namespace.MatchString(rule["expr"].(string)) {
			t.Errorf("%s: %s does not keep to the release namespace", name, rule["expr"])
		}
		if a := rule["annotations"].(map[string]any); a["summary"] == nil || !strings.Contains(a["runbook_url"].(string),
			"docs/metrics.md#"+strings.ToLower(name)) {
			t.Errorf("%s: annotations %v", name, a)
		}
	}
	if e := got["ArgoCDPullPropagationLatencyHigh"]["expr"].(string); !strings.HasSuffix(e, "> 120") {
		t.Errorf("latency threshold: %s", e)
	}
	if e := got["ArgoCDPullReportQuotaNearFull"]["expr"].(string); !strings.HasSuffix(e, "> 0.9") {
		t.Errorf("quota threshold: %s", e)
	}
}

func TestTenantRolesAggregateReadOnlyIntoViewEditAndAdmin(t *testing.T) {
	objs, _ := render(t, nil)
	role := find(t, objs, "ClusterRole", "-tenant-view")
	for _, to := range []string{"view", "edit", "admin"} {
		if role.GetLabels()["rbac.authorization.k8s.io/aggregate-to-"+to] != "true" {
			t.Errorf("labels %v: not aggregated to %s", role.GetLabels(), to)
		}
	}
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	for _, r := range rules {
		verbs, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "verbs")
		for _, v := range verbs {
			if !slices.Contains([]string{"get", "list", "watch"}, v) {
				t.Errorf("rule %v grants %s", r, v)
			}
		}
	}
	objs, _ = render(t, map[string]any{"tenantRoles": map[string]any{"enabled": false}})
	for _, o := range objs {
		if strings.Contains(o.GetName(), "tenant") {
			t.Errorf("%s %s rendered with tenantRoles.enabled false", o.GetKind(), o.GetName())
		}
	}
}

// TestMonitoringObjectsAreThePrometheusOperators decodes the ServiceMonitor and the
// PrometheusRule into the Prometheus Operator's own types, refusing any field they do not
// have: what the operator's CRDs would prune or refuse.
func TestMonitoringObjectsAreThePrometheusOperators(t *testing.T) {
	_, files := render(t, everythingEnabled())
	for file, into := range map[string]any{
		"metrics-servicemonitor.yaml": &monitoringv1.ServiceMonitor{},
		"metrics-prometheusrule.yaml": &monitoringv1.PrometheusRule{},
	} {
		content := files[framework.ChartName+"/templates/"+file]
		if !strings.Contains(content, "kind: ") {
			t.Fatalf("%s not rendered", file)
		}
		if err := yaml.UnmarshalStrict([]byte(content), into); err != nil {
			t.Errorf("%s: %v", file, err)
		}
		// The same decoding refuses a field the operator does not know.
		misspelt := strings.Replace(content, "spec:", "spec:\n  endpoint: []", 1)
		if err := yaml.UnmarshalStrict([]byte(misspelt), into); err == nil {
			t.Errorf("%s with an unknown field decoded", file)
		}
	}
	sm := &monitoringv1.ServiceMonitor{}
	if err := yaml.UnmarshalStrict([]byte(files[framework.ChartName+"/templates/metrics-servicemonitor.yaml"]), sm); err != nil {
		t.Fatal(err)
	}
	ep := sm.Spec.Endpoints[0]
	if ep.Authorization == nil || ep.Authorization.Credentials == nil || ep.Authorization.Credentials.Name != "prometheus-token" ||
		ep.TLSConfig == nil || ep.TLSConfig.InsecureSkipVerify == nil || !*ep.TLSConfig.InsecureSkipVerify || ep.BearerTokenFile != "" {
		t.Errorf("endpoint as the operator reads it: %+v", ep)
	}
}
