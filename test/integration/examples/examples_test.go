package examples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// exampleFileName is how a story's files are named: a two-digit step, then what it is.
var exampleFileName = regexp.MustCompile(`^([0-9]{2})-[a-z0-9]+(-[a-z0-9]+)*\.yaml$`)

// hubRenderedPlugin is the chart's default plugin name (values.yaml cmp.name), which the
// hub-rendered examples name.
const hubRenderedPlugin = "ocm-manifestwork"

// The clusters the examples name; the first two are in the "default" ManagedClusterSet,
// as every cluster is once it joined a hub with OCM's webhooks.
var clusters = []string{"cluster1", "cluster2", "cluster3"}

// story is one directory of examples/ with its files, in apply order.
type story struct {
	name  string
	files []framework.ExampleFile
}

var _ = Describe("The examples", Ordered, ContinueOnFailure, func() {
	var stories []story

	BeforeAll(func() {
		names, err := framework.ExampleStories()
		Expect(err).NotTo(HaveOccurred())
		Expect(names).NotTo(BeEmpty())
		for _, name := range names {
			files, err := framework.ReadExamples(name)
			Expect(err).NotTo(HaveOccurred())
			stories = append(stories, story{name: name, files: files})
		}
	})

	It("are all in story directories, numbered in the order they apply, each read by this suite", func() {
		dir, err := framework.ExamplesDir()
		Expect(err).NotTo(HaveOccurred())
		read := map[string]bool{}
		for _, s := range stories {
			for _, f := range s.files {
				read[f.Path] = true
			}
		}
		var problems []string
		steps := map[string][]int{}
		Expect(filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(dir, path)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			parts := strings.Split(rel, "/")
			switch {
			case rel == "README.md":
			case len(parts) == 1:
				problems = append(problems, rel+": not in a story directory (kubectl apply -f examples/ would apply it out of any order)")
			case len(parts) > 2:
				problems = append(problems, rel+": in a nested directory, which kubectl apply -f examples/"+parts[0]+"/ does not read")
			case !exampleFileName.MatchString(parts[1]):
				problems = append(problems, rel+": not named NN-what.yaml")
			case !read[rel]:
				problems = append(problems, rel+": not read by this suite")
			default:
				n, _ := strconv.Atoi(exampleFileName.FindStringSubmatch(parts[1])[1])
				steps[parts[0]] = append(steps[parts[0]], n)
			}
			return nil
		})).To(Succeed())
		for story, ns := range steps {
			for i, n := range ns {
				if n != i+1 {
					problems = append(problems, fmt.Sprintf("%s: steps %v, not 01 to %02d without gaps or repeats", story, ns, len(ns)))
					break
				}
			}
		}
		Expect(problems).To(BeEmpty())
	})

	It("apply, story by story and file by file in order, server-side, on a hub as the install leaves it", func(ctx context.Context) {
		installedHub(ctx)
		applied := 0
		for _, s := range stories {
			Expect(s.files).NotTo(BeEmpty(), "examples/%s has no manifest", s.name)
			for _, f := range s.files {
				Expect(f.Objects).NotTo(BeEmpty(), "examples/%s holds no object", f.Path)
				for _, obj := range f.Objects {
					namespaced, err := k8s.IsObjectNamespaced(obj)
					Expect(err).NotTo(HaveOccurred(), f.Path)
					// kubectl would put an object without a namespace into the reader's
					// current one: each example says where it goes.
					Expect(obj.GetNamespace() != "").To(Equal(namespaced), "%s: %s %s names a namespace only if it is namespaced", f.Path, obj.GetKind(), obj.GetName())
					Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()),
						client.FieldOwner("kubectl"), client.ForceOwnership)).To(Succeed(), f.Path)
					applied++
				}
			}
		}
		AddReportEntry("objects applied", applied)
	})

	It("carry the pull model's wire contract exactly, and hub-rendered ones none of it", func() {
		checked := 0
		for _, s := range stories {
			for _, f := range s.files {
				for _, obj := range f.Objects {
					meta, ok := applicationMeta(obj)
					if !ok {
						continue
					}
					where := fmt.Sprintf("%s: %s %s", f.Path, obj.GetKind(), obj.GetName())
					if _, pulled := meta.GetLabels()[apps.LabelPullToOCMManagedCluster]; pulled {
						expectPulled(meta, where)
					} else {
						expectHubRendered(obj, meta, where)
					}
					checked++
				}
			}
		}
		Expect(checked).To(BeNumerically(">=", 6), "Applications and ApplicationSets checked")
	})

	It("have every Application of a RollingSync ApplicationSet selected by exactly one step", func() {
		rolling := 0
		for _, s := range stories {
			for _, f := range s.files {
				for _, obj := range f.Objects {
					if obj.GetKind() != "ApplicationSet" {
						continue
					}
					// Through JSON: Argo CD's types do not convert from unstructured by reflection.
					data, err := json.Marshal(obj.Object)
					Expect(err).NotTo(HaveOccurred(), f.Path)
					set := &argov1alpha1.ApplicationSet{}
					Expect(json.Unmarshal(data, set)).To(Succeed(), f.Path)
					if set.Spec.Strategy == nil || set.Spec.Strategy.Type != "RollingSync" {
						continue
					}
					expectEveryStageStepped(set, f.Path)
					rolling++
				}
			}
		}
		Expect(rolling).To(BeNumerically(">=", 1), "RollingSync ApplicationSets checked")
	})

	It("are delivered under the hub's tenancy checks, and the tenant's AppProject refuses what is not the team's", func(ctx context.Context) {
		deliveryChecks(ctx)
	})
})

// installedHub creates what the stories start from on a hub (docs/install.md): Argo CD's
// namespace and its default AppProject, the clusters with their namespaces, and OCM's
// two ManagedClusterSets, default (clusters 1 and 2) and global.
func installedHub(ctx context.Context) {
	GinkgoHelper()
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd"}},
		&argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "argocd"},
			Spec: argov1alpha1.AppProjectSpec{SourceRepos: []string{"*"},
				Destinations:             []argov1alpha1.ApplicationDestination{{Server: "*", Namespace: "*"}},
				ClusterResourceWhitelist: []metav1.GroupKind{{Group: "*", Kind: "*"}}}},
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: framework.GlobalClusterSet},
			Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{
				SelectorType: clusterv1beta2.LabelSelector, LabelSelector: &metav1.LabelSelector{}}}},
	}
	for i, c := range clusters {
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: c}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
		if i < 2 {
			mc.Labels = map[string]string{clusterv1beta2.ClusterSetLabel: "default"}
		}
		objs = append(objs, mc, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c}})
	}
	for _, o := range objs {
		Expect(k8s.Create(ctx, o)).To(Succeed(), "%T %s", o, o.GetName())
	}
}

// applicationMeta is the metadata the wire contract is about: an Application's own, an
// ApplicationSet's template's.
func applicationMeta(obj *unstructured.Unstructured) (metav1.Object, bool) {
	switch obj.GetKind() {
	case "Application":
		return obj, true
	case "ApplicationSet":
		tmpl, _, _ := unstructured.NestedMap(obj.Object, "spec", "template", "metadata")
		meta := &unstructured.Unstructured{Object: map[string]any{"metadata": tmpl}}
		return meta, true
	}
	return nil, false
}

// contractAnnotations are the annotations of apps.open-cluster-management.io a user puts
// on a pulled hub Application; any other of that prefix is a typo or the hub's own.
var contractAnnotations = []string{
	apps.AnnotationOCMManagedCluster, apps.AnnotationOCMManagedClusterAppNamespace,
	apps.AnnotationDestinationName, apps.AnnotationDestinationServer,
}

func expectPulled(meta metav1.Object, where string) {
	GinkgoHelper()
	marked, err := pullmodel.Marked(meta)
	Expect(err).NotTo(HaveOccurred(), where)
	Expect(marked).To(BeTrue(), where)
	Expect(meta.GetAnnotations()).To(HaveKeyWithValue(apps.AnnotationSkipReconcile, "true"), where)
	Expect(meta.GetAnnotations()[apps.AnnotationOCMManagedCluster]).NotTo(BeEmpty(), where)
	Expect(meta.GetAnnotations()[apps.AnnotationOCMManagedClusterAppNamespace]).NotTo(BeEmpty(),
		"%s: the cluster's Argo CD namespace, which its agent watches", where)
	for k := range meta.GetAnnotations() {
		if strings.HasPrefix(k, "apps.open-cluster-management.io/") {
			Expect(contractAnnotations).To(ContainElement(k), where)
		}
	}
	for k := range meta.GetLabels() {
		if strings.HasPrefix(k, "apps.open-cluster-management.io/") {
			Expect(k).To(Equal(apps.LabelPullToOCMManagedCluster), where)
		}
	}
}

func expectHubRendered(obj *unstructured.Unstructured, meta metav1.Object, where string) {
	GinkgoHelper()
	plugin := []string{"spec", "source", "plugin", "name"}
	if obj.GetKind() == "ApplicationSet" {
		plugin = append([]string{"spec", "template"}, plugin...)
	}
	name, _, _ := unstructured.NestedString(obj.Object, plugin...)
	Expect(name).To(Equal(hubRenderedPlugin), "%s: neither pulled nor hub-rendered", where)
	Expect(meta.GetAnnotations()).NotTo(HaveKey(apps.AnnotationSkipReconcile), "%s: the hub's Argo CD syncs it", where)
	for k := range meta.GetAnnotations() {
		Expect(k).NotTo(HavePrefix("apps.open-cluster-management.io/"), where)
	}
}

// expectEveryStageStepped renders the template's labels for each generator's values, as
// the ApplicationSet controller does ({{values.key}}), and checks that exactly one step of
// the RollingSync strategy selects them: an Application no step selects is never synced.
func expectEveryStageStepped(set *argov1alpha1.ApplicationSet, where string) {
	GinkgoHelper()
	var selectors []labels.Selector
	for _, step := range set.Spec.Strategy.RollingSync.Steps {
		sel := &metav1.LabelSelector{}
		for _, e := range step.MatchExpressions {
			sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{
				Key: e.Key, Operator: metav1.LabelSelectorOperator(e.Operator), Values: e.Values})
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		Expect(err).NotTo(HaveOccurred(), where)
		selectors = append(selectors, s)
	}
	Expect(set.Spec.Generators).NotTo(BeEmpty(), where)
	for i, g := range set.Spec.Generators {
		Expect(g.ClusterDecisionResource).NotTo(BeNil(), "%s: generator %d", where, i)
		rendered := labels.Set{}
		for k, v := range set.Spec.Template.Labels {
			for key, value := range g.ClusterDecisionResource.Values {
				v = strings.ReplaceAll(v, "{{values."+key+"}}", value)
			}
			rendered[k] = v
		}
		matching := 0
		for _, s := range selectors {
			if s.Matches(rendered) {
				matching++
			}
		}
		Expect(matching).To(Equal(1), "%s: generator %d gives Applications labels %v", where, i, rendered)
	}
}
