package chart_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	// The agent's metrics register with the same registry when its package loads, as in
	// the agent binary.
	_ "github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/agent"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/version"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// dashboardFile is the Grafana dashboard the chart ships.
var dashboardFile = filepath.Join("files", "grafana-dashboard.json")

func renderWith(values map[string]any) []*unstructured.Unstructured {
	GinkgoHelper()
	objs, err := framework.RenderChart(framework.ChartNamespace, values)
	Expect(err).NotTo(HaveOccurred())
	return objs
}

// findRendered returns the rendered object of kind whose name ends with suffix, nil if none.
func findRendered(objs []*unstructured.Unstructured, kind, suffix string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && strings.HasSuffix(o.GetName(), suffix) {
			return o
		}
	}
	return nil
}

func convert[T any](u *unstructured.Unstructured, into *T) *T {
	GinkgoHelper()
	Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)).To(Succeed())
	return into
}

// dashboardQueries are the PromQL expressions of every panel target in the dashboard.
func dashboardQueries(raw []byte) []string {
	GinkgoHelper()
	var dashboard struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	Expect(json.Unmarshal(raw, &dashboard)).To(Succeed())
	var out []string
	for _, p := range dashboard.Panels {
		for _, t := range p.Targets {
			Expect(t.Expr).NotTo(BeEmpty(), "panel %q has a target without a query", p.Title)
			out = append(out, t.Expr)
		}
	}
	return out
}

// grafanaVariable is a dashboard variable reference, $name or ${name}.
var grafanaVariable = regexp.MustCompile(`\$\{?(\w+)\}?`)

// metricNames parses expr as Prometheus does, with Grafana's variables replaced by values
// of their kind, and returns the metric names its selectors read.
func metricNames(expr string) []string {
	GinkgoHelper()
	plain := grafanaVariable.ReplaceAllStringFunc(expr, func(v string) string {
		if strings.Contains(v, "interval") {
			return "5m"
		}
		return ".*"
	})
	parsed, err := parser.ParseExpr(plain)
	Expect(err).NotTo(HaveOccurred(), "query %q", expr)
	var names []string
	parser.Inspect(parsed, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		Expect(name).NotTo(BeEmpty(), "query %q selects series without naming a metric", expr)
		names = append(names, name)
		return nil
	})
	Expect(names).NotTo(BeEmpty(), "query %q reads no metric", expr)
	return names
}

// exportedNames are the series names the registry's families expose: a histogram's
// _bucket, _sum and _count, a summary's _sum and _count, every other family's own name.
func exportedNames(families []*dto.MetricFamily) map[string]bool {
	out := map[string]bool{}
	for _, f := range families {
		name := f.GetName()
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			out[name+"_bucket"], out[name+"_sum"], out[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			out[name+"_sum"], out[name+"_count"] = true, true
		default:
			out[name] = true
		}
	}
	return out
}

var _ = Describe("The chart's metrics", func() {
	It("renders no metrics Service, ServiceMonitor or dashboard by default", func() {
		for _, kind := range []string{"ServiceMonitor", "Service", "ConfigMap"} {
			for _, o := range rendered {
				if o.GetKind() == kind {
					Expect(o.GetName()).NotTo(Or(HaveSuffix("-metrics"), HaveSuffix("-dashboard")), "%s rendered by default", kind)
				}
			}
		}
	})

	It("with serviceMonitor enabled, selects the manager's metrics port through a Service the API server accepts", func(ctx context.Context) {
		objs := renderWith(map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{
			"enabled": true, "interval": "15s", "additionalLabels": map[string]any{"release": "kube-prometheus-stack"},
			"authorization": map[string]any{"credentials": map[string]any{"name": "prometheus-token", "key": "token"}},
			"tlsConfig":     map[string]any{"insecureSkipVerify": true},
		}}})
		svcObj := findRendered(objs, "Service", "-manager-metrics")
		Expect(svcObj).NotTo(BeNil(), "a ServiceMonitor needs the metrics Service")
		svc := convert(svcObj, &corev1.Service{})
		deployment := convert(findRendered(objs, "Deployment", "-manager"), &appsv1.Deployment{})

		By("the Service selects the manager Pods and targets the port the manager serves metrics on")
		podLabels := deployment.Spec.Template.Labels
		for k, v := range svc.Spec.Selector {
			Expect(podLabels).To(HaveKeyWithValue(k, v))
		}
		c := deployment.Spec.Template.Spec.Containers[0]
		Expect(svc.Spec.Ports).To(HaveLen(1))
		port := svc.Spec.Ports[0]
		Expect(c.Ports).To(ContainElement(And(HaveField("Name", port.TargetPort.StrVal), HaveField("ContainerPort", int32(8080)))))
		cmd := managerCommand()
		Expect(cmd.ParseFlags(c.Args[1:])).To(Succeed())
		Expect(cmd.Flags().Lookup("metrics-bind-address").Value.String()).To(Equal(":8080"), "the manager serves metrics on that port")
		Expect(k8s.Create(ctx, svc)).To(Succeed(), "the API server accepts the Service")

		By("the ServiceMonitor selects that Service's port by name in the release namespace")
		sm := findRendered(objs, "ServiceMonitor", "-manager")
		Expect(sm).NotTo(BeNil())
		Expect(sm.GetAPIVersion()).To(Equal("monitoring.coreos.com/v1"))
		Expect(sm.GetLabels()).To(HaveKeyWithValue("release", "kube-prometheus-stack"))
		selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
		Expect(selector).NotTo(BeEmpty())
		for k, v := range selector {
			Expect(svc.Labels).To(HaveKeyWithValue(k, v))
		}
		namespaces, _, _ := unstructured.NestedStringSlice(sm.Object, "spec", "namespaceSelector", "matchNames")
		Expect(namespaces).To(ConsistOf(svc.Namespace))
		endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		Expect(endpoints).To(ConsistOf(And(HaveKeyWithValue("port", port.Name), HaveKeyWithValue("path", "/metrics"),
			HaveKeyWithValue("interval", "15s"))))
	})

	It("with dashboard enabled, ships the dashboard file in a ConfigMap with Grafana's sidecar label", func() {
		objs := renderWith(map[string]any{"metrics": map[string]any{"dashboard": map[string]any{"enabled": true}}})
		cm := findRendered(objs, "ConfigMap", "-dashboard")
		Expect(cm).NotTo(BeNil())
		Expect(cm.GetLabels()).To(HaveKeyWithValue("grafana_dashboard", "1"))
		root, err := framework.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		file, err := os.ReadFile(filepath.Join(root, "charts", framework.ChartName, dashboardFile))
		Expect(err).NotTo(HaveOccurred())
		data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
		Expect(data).To(HaveLen(1))
		for _, content := range data {
			Expect(content).To(MatchJSON(file))
		}
	})

	It("has alerts that Prometheus' own rule parser accepts, each reading only metrics the manager and the agent export", func(ctx context.Context) {
		reportInClusterNamespace(ctx)
		objs := renderWith(map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true}}})
		rule := findRendered(objs, "PrometheusRule", "-manager")
		Expect(rule).NotTo(BeNil())
		spec, _, _ := unstructured.NestedMap(rule.Object, "spec")
		// The operator hands spec.groups to Prometheus as a rule file.
		file, err := yaml.Marshal(spec)
		Expect(err).NotTo(HaveOccurred())
		groups, errs := rulefmt.Parse(file, false)
		Expect(errs).To(BeEmpty(), "rule file:\n%s", file)
		var exprs []string
		for _, g := range groups.Groups {
			for _, r := range g.Rules {
				Expect(r.Alert).NotTo(BeEmpty(), "a recording rule in the alerts: %s", r.Record)
				exprs = append(exprs, r.Expr)
			}
		}
		Expect(exprs).To(HaveLen(5))
		Eventually(func(g Gomega) {
			families, err := metrics.Registry.Gather()
			g.Expect(err).NotTo(HaveOccurred())
			exported := exportedNames(families)
			for _, e := range exprs {
				for _, name := range metricNames(e) {
					g.Expect(exported).To(HaveKey(name), "alert expression %q", e)
				}
			}
		}, timeout, interval).Should(Succeed())

		By("the report quota's gauges say how full the cluster namespace is, against the chart's quota")
		Eventually(func(g Gomega) {
			m, err := framework.GatherMetrics()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(m.Value("argocd_pull_cluster_reports", "cluster", metricsCluster)).To(BeEquivalentTo(1))
			g.Expect(m.Value("argocd_pull_report_quota")).To(BeEquivalentTo(1000), "security.agentReportQuota's default")
		}, timeout, interval).Should(Succeed())

		By("the check fails on a metric no binary exports")
		exported := exportedNames(must(metrics.Registry.Gather()))
		Expect(exported).NotTo(HaveKey("argocd_pull_reports_stale"))
		Expect(exported).To(HaveKey(version.BuildInfoMetric), "the manager registers its build info when it runs")
	})

	It("has a dashboard whose every query names metrics the manager and the agent export", func(ctx context.Context) {
		reportInClusterNamespace(ctx)
		root, err := framework.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		raw, err := os.ReadFile(filepath.Join(root, "charts", framework.ChartName, dashboardFile))
		Expect(err).NotTo(HaveOccurred())
		queries := dashboardQueries(raw)
		Expect(queries).NotTo(BeEmpty())
		// The controllers register their work queue and reconcile metrics when they start,
		// which the manager started in BeforeSuite does on its own schedule.
		Eventually(func(g Gomega) {
			families, err := metrics.Registry.Gather()
			g.Expect(err).NotTo(HaveOccurred())
			exported := exportedNames(families)
			for _, q := range queries {
				for _, name := range metricNames(q) {
					g.Expect(exported).To(HaveKey(name), "query %q", q)
				}
			}
		}, timeout, interval).Should(Succeed())
	})
})

func must[T any](v T, err error) T {
	GinkgoHelper()
	Expect(err).NotTo(HaveOccurred())
	return v
}

// metricsCluster is the cluster namespace holding reportInClusterNamespace's report.
const metricsCluster = "metrics-cluster"

// reportInClusterNamespace makes sure an agent's ApplicationStatusReport exists in a cluster
// namespace, so that the gauge counting them per cluster has a series to export.
func reportInClusterNamespace(ctx context.Context) {
	GinkgoHelper()
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metricsCluster}},
		&appsv1alpha1.ApplicationStatusReport{
			ObjectMeta: metav1.ObjectMeta{Namespace: metricsCluster, Name: "argocd.guestbook"},
			Source: appsv1alpha1.ApplicationReportSource{Cluster: metricsCluster, Namespace: "argocd", Name: "guestbook",
				HubApplicationNamespace: "argocd", HubApplicationName: "guestbook-" + metricsCluster},
			Status: appsv1alpha1.ApplicationReportStatus{ObservedAt: metav1.Now()},
		},
	} {
		Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, o))).To(Succeed())
	}
}
