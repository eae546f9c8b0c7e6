package propagation_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/propagation"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// Bad input never deletes what runs: an Application that cannot be delivered as it is
// now keeps the ManifestWork delivered before, byte for byte, says why in a condition and
// a Warning Event, and is delivered again once fixed.

// editApp applies edit to the stored Application; the controller writes its conditions
// concurrently, so a conflict is retried on a fresh read.
func editApp(ctx context.Context, app *argov1alpha1.Application, edit func(*argov1alpha1.Application)) {
	GinkgoHelper()
	Eventually(func() error {
		got := &argov1alpha1.Application{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(app), got); err != nil {
			return err
		}
		edit(got)
		return k8s.Update(ctx, got)
	}).Should(Succeed())
}

// propagationConditions are the conditions of app that the propagation controller writes.
func propagationConditions(ctx context.Context, app *argov1alpha1.Application) []argov1alpha1.ApplicationCondition {
	GinkgoHelper()
	var out []argov1alpha1.ApplicationCondition
	for _, c := range getApp(ctx, app).Status.Conditions {
		if pullmodel.IsHubCondition(c) && slices.Contains(pullmodel.PropagationConditionTypes, c.Type) {
			out = append(out, c)
		}
	}
	return out
}

// expectCondition waits until app carries exactly one propagation condition, of type t,
// whose message contains every text.
func expectCondition(ctx context.Context, app *argov1alpha1.Application, t argov1alpha1.ApplicationConditionType, texts ...string) {
	GinkgoHelper()
	matchers := []types.GomegaMatcher{HavePrefix(pullmodel.HubConditionPrefix)}
	for _, text := range texts {
		matchers = append(matchers, ContainSubstring(text))
	}
	Eventually(func() []argov1alpha1.ApplicationCondition { return propagationConditions(ctx, app) }).
		Should(ConsistOf(And(HaveField("Type", t), HaveField("Message", And(matchers...)))))
}

// expectUntouched checks that w stays exactly as it was: same resourceVersion.
func expectUntouched(ctx context.Context, w *workv1.ManifestWork) {
	GinkgoHelper()
	Consistently(func(g Gomega) string {
		cur := &workv1.ManifestWork{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w), cur)).To(Succeed())
		g.Expect(cur.DeletionTimestamp).To(BeNil())
		return cur.ResourceVersion
	}).Should(Equal(w.ResourceVersion))
}

// expectDelivered waits until app's condition is gone and its only ManifestWork is
// namespace/workName(app) with the payload at targetRevision.
func expectDelivered(ctx context.Context, app *argov1alpha1.Application, namespace, targetRevision string) {
	GinkgoHelper()
	Eventually(func() []argov1alpha1.ApplicationCondition { return propagationConditions(ctx, app) }).Should(BeEmpty())
	expectWorkAt(ctx, client.ObjectKey{Namespace: namespace, Name: workName(app)}, targetRevision)
	expectOnlyWork(ctx, app, namespace, workName(app))
}

// expectEventOnce checks that app's Warning Events with reason add up to one: recorded on
// the transition, not on each reconcile after it (the recorder would count repeats).
func expectEventOnce(ctx context.Context, app *argov1alpha1.Application, reason string) {
	GinkgoHelper()
	Consistently(func(g Gomega) int32 {
		events := &corev1.EventList{}
		g.Expect(k8s.List(ctx, events, client.InNamespace(app.Namespace),
			client.MatchingFields{"involvedObject.name": app.Name})).To(Succeed())
		var n int32
		for _, e := range events.Items {
			if e.InvolvedObject.UID == app.UID && e.Type == corev1.EventTypeWarning && e.Reason == reason {
				n += max(e.Count, 1)
			}
		}
		return n
	}).Should(Equal(int32(1)))
}

// deletingCluster registers a ManagedCluster and starts deleting it; a finalizer keeps
// it in that state until the spec ends.
func deletingCluster(ctx context.Context) string {
	GinkgoHelper()
	c := newCluster(ctx, nil)
	startDeleting(ctx, c)
	return c
}

// startDeleting starts deleting ManagedCluster c; a finalizer keeps it in that state
// until the spec ends.
func startDeleting(ctx context.Context, c string) {
	GinkgoHelper()
	mc := &clusterv1.ManagedCluster{}
	Expect(k8s.Get(ctx, client.ObjectKey{Name: c}, mc)).To(Succeed())
	mc.Finalizers = []string{"test.open-cluster-management.io/hold"}
	Expect(k8s.Update(ctx, mc)).To(Succeed())
	Expect(k8s.Delete(ctx, mc)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		Expect(k8s.Get(ctx, client.ObjectKey{Name: c}, mc)).To(Succeed())
		mc.Finalizers = nil
		Expect(k8s.Update(ctx, mc)).To(Succeed())
	})
}

// oversizedInfo makes the Application's payload larger than OCM's ManifestWork limit.
func oversizedInfo() []argov1alpha1.Info {
	return []argov1alpha1.Info{{Name: "notes", Value: strings.Repeat("x", pullmodel.ManifestsLimit)}}
}

var _ = Describe("Bad input never deletes what runs", func() {
	DescribeTable("keeps the delivered ManifestWork untouched while the Application is invalid, and delivers it again once fixed",
		func(ctx context.Context, condition argov1alpha1.ApplicationConditionType, reason, text string,
			mistake func(ctx context.Context) func(*argov1alpha1.Application)) {
			c := newCluster(ctx, nil)
			app := createApp(ctx, hubApp("keep-"+c).Cluster(c).Build())
			w := expectOnlyWork(ctx, app, c, workName(app))
			before := getApp(ctx, app)

			By("making the mistake")
			editApp(ctx, app, mistake(ctx))
			kept := fmt.Sprintf("The ManifestWork %s/%s delivered before is kept unchanged", c, w.Name)
			expectCondition(ctx, app, condition, text, kept)
			expectEvent(ctx, app, reason, text)
			expectUntouched(ctx, w)
			expectOnlyWork(ctx, app, c, w.Name)
			expectEventOnce(ctx, app, reason)

			By("fixing it, along with a change the work must carry")
			editApp(ctx, app, func(a *argov1alpha1.Application) {
				a.Labels, a.Annotations = before.Labels, before.Annotations
				a.Spec = *before.Spec.DeepCopy()
				a.Spec.Source.TargetRevision = "v2"
			})
			expectDelivered(ctx, app, c, "v2")
		},
		Entry("pull label True", pullmodel.ConditionInvalidSpec, propagation.ReasonInvalidPullLabel, `="True" is neither "true" nor "false"`,
			func(context.Context) func(*argov1alpha1.Application) {
				return func(a *argov1alpha1.Application) { a.Labels[apps.LabelPullToOCMManagedCluster] = "True" }
			}),
		Entry("pull label yes", pullmodel.ConditionInvalidSpec, propagation.ReasonInvalidPullLabel, `="yes" is neither`,
			func(context.Context) func(*argov1alpha1.Application) {
				return func(a *argov1alpha1.Application) { a.Labels[apps.LabelPullToOCMManagedCluster] = "yes" }
			}),
		Entry("pull label empty", pullmodel.ConditionInvalidSpec, propagation.ReasonInvalidPullLabel, `="" is neither`,
			func(context.Context) func(*argov1alpha1.Application) {
				return func(a *argov1alpha1.Application) { a.Labels[apps.LabelPullToOCMManagedCluster] = "" }
			}),
		Entry("cluster annotation removed", pullmodel.ConditionInvalidSpec, propagation.ReasonInvalidApplication, "is missing or empty",
			func(context.Context) func(*argov1alpha1.Application) {
				return func(a *argov1alpha1.Application) { delete(a.Annotations, apps.AnnotationOCMManagedCluster) }
			}),
		Entry("cluster annotation emptied", pullmodel.ConditionInvalidSpec, propagation.ReasonInvalidApplication, "is missing or empty",
			func(context.Context) func(*argov1alpha1.Application) {
				return func(a *argov1alpha1.Application) { a.Annotations[apps.AnnotationOCMManagedCluster] = "" }
			}),
		Entry("cluster annotation not a name", pullmodel.ConditionInvalidSpec, propagation.ReasonInvalidApplication, "is not a valid cluster name",
			func(context.Context) func(*argov1alpha1.Application) {
				return func(a *argov1alpha1.Application) { a.Annotations[apps.AnnotationOCMManagedCluster] = "Cluster_1" }
			}),
		Entry("spoke namespace not a name", pullmodel.ConditionInvalidSpec, propagation.ReasonInvalidApplication, "is not a namespace name",
			func(context.Context) func(*argov1alpha1.Application) {
				return func(a *argov1alpha1.Application) {
					a.Annotations[apps.AnnotationOCMManagedClusterAppNamespace] = "Argo CD"
				}
			}),
		Entry("destination-server without https:// (the typo)", pullmodel.ConditionInvalidSpec, propagation.ReasonInvalidApplication,
			`="kubernetes.default.svc" is not an https URL`,
			func(context.Context) func(*argov1alpha1.Application) {
				return func(a *argov1alpha1.Application) {
					a.Annotations[apps.AnnotationDestinationServer] = "kubernetes.default.svc"
				}
			}),
		Entry("both destination overrides", pullmodel.ConditionInvalidSpec, propagation.ReasonInvalidApplication, "keep only one",
			func(context.Context) func(*argov1alpha1.Application) {
				return func(a *argov1alpha1.Application) {
					a.Annotations[apps.AnnotationDestinationServer] = "https://10.0.0.1:6443"
					a.Annotations[apps.AnnotationDestinationName] = "in-cluster"
				}
			}),
		Entry("empty destination-name", pullmodel.ConditionInvalidSpec, propagation.ReasonInvalidApplication, "is empty",
			func(context.Context) func(*argov1alpha1.Application) {
				return func(a *argov1alpha1.Application) { a.Annotations[apps.AnnotationDestinationName] = " " }
			}),
		Entry("retargeted to a cluster that does not exist", pullmodel.ConditionInvalidSpec, propagation.ReasonClusterNotFound, "does not exist",
			func(context.Context) func(*argov1alpha1.Application) {
				return func(a *argov1alpha1.Application) { a.Annotations[apps.AnnotationOCMManagedCluster] = "no-such-cluster" }
			}),
		Entry("retargeted to the hub's local cluster", pullmodel.ConditionInvalidSpec, propagation.ReasonLocalCluster, "is the hub itself",
			func(ctx context.Context) func(*argov1alpha1.Application) {
				local := newCluster(ctx, map[string]string{propagation.LabelLocalCluster: "true"})
				return func(a *argov1alpha1.Application) { a.Annotations[apps.AnnotationOCMManagedCluster] = local }
			}),
		Entry("retargeted to a cluster being deleted", pullmodel.ConditionInvalidSpec, propagation.ReasonClusterDeleting, "is being deleted",
			func(ctx context.Context) func(*argov1alpha1.Application) {
				leaving := deletingCluster(ctx)
				return func(a *argov1alpha1.Application) { a.Annotations[apps.AnnotationOCMManagedCluster] = leaving }
			}),
		Entry("grown over OCM's ManifestWork size limit", pullmodel.ConditionDeliveryError, propagation.ReasonManifestWorkTooLarge,
			fmt.Sprintf("over OCM's ManifestWork limit of %d bytes", pullmodel.ManifestsLimit),
			func(context.Context) func(*argov1alpha1.Application) {
				return func(a *argov1alpha1.Application) { a.Spec.Info = oversizedInfo() }
			}),
	)

	DescribeTable("delivers nothing for an Application created invalid, and leaves others alone",
		func(ctx context.Context, condition argov1alpha1.ApplicationConditionType, reason, text string,
			edit func(ctx context.Context, a *argov1alpha1.Application)) {
			c := newCluster(ctx, nil)
			good := createApp(ctx, hubApp("good-"+c).Cluster(c).Build())
			bad := hubApp("bad-" + c).Cluster(c).Build()
			edit(ctx, bad)
			bad = createApp(ctx, bad)
			expectEvent(ctx, bad, reason, text)
			expectCondition(ctx, bad, condition, text)
			Expect(propagationConditions(ctx, bad)[0].Message).NotTo(ContainSubstring("kept unchanged"))
			expectNoWork(ctx, client.ObjectKeyFromObject(bad))
			expectOnlyWork(ctx, good, c, workName(good))
			Expect(propagationConditions(ctx, good)).To(BeEmpty())
		},
		Entry("missing cluster annotation", pullmodel.ConditionInvalidSpec, propagation.ReasonInvalidApplication, "is missing or empty",
			func(_ context.Context, a *argov1alpha1.Application) {
				delete(a.Annotations, apps.AnnotationOCMManagedCluster)
			}),
		Entry("a cluster that does not exist", pullmodel.ConditionInvalidSpec, propagation.ReasonClusterNotFound, "does not exist",
			func(_ context.Context, a *argov1alpha1.Application) {
				a.Annotations[apps.AnnotationOCMManagedCluster] = "no-such-cluster"
			}),
		Entry("a cluster being deleted", pullmodel.ConditionInvalidSpec, propagation.ReasonClusterDeleting, "is being deleted",
			func(ctx context.Context, a *argov1alpha1.Application) {
				a.Annotations[apps.AnnotationOCMManagedCluster] = deletingCluster(ctx)
			}),
		Entry("a pull label that is neither true nor false", pullmodel.ConditionInvalidSpec, propagation.ReasonInvalidPullLabel, "is neither",
			func(_ context.Context, a *argov1alpha1.Application) {
				a.Labels[apps.LabelPullToOCMManagedCluster] = "1"
			}),
		Entry("a destination-server that is not https", pullmodel.ConditionInvalidSpec, propagation.ReasonInvalidApplication, "is not an https URL",
			func(_ context.Context, a *argov1alpha1.Application) {
				a.Annotations[apps.AnnotationDestinationServer] = "http://10.0.0.1:6443"
			}),
		Entry("a payload over OCM's ManifestWork size limit", pullmodel.ConditionDeliveryError, propagation.ReasonManifestWorkTooLarge,
			"bytes of manifests, over OCM's ManifestWork limit",
			func(_ context.Context, a *argov1alpha1.Application) { a.Spec.Info = oversizedInfo() }),
	)

	It("deletes the work of a cluster that starts being deleted", func(ctx context.Context) {
		c := newCluster(ctx, nil)
		app := createApp(ctx, hubApp("cluster-goes").Cluster(c).Build())
		expectOnlyWork(ctx, app, c, workName(app))
		startDeleting(ctx, c)
		expectEvent(ctx, app, propagation.ReasonClusterDeleting, "is being deleted")
		expectNoWork(ctx, client.ObjectKeyFromObject(app))
		expectCondition(ctx, app, pullmodel.ConditionInvalidSpec, "is being deleted")
		Expect(propagationConditions(ctx, app)[0].Message).NotTo(ContainSubstring("kept unchanged"))
	})

	It("moves the work once a missing target cluster is registered, deleting the old one after", func(ctx context.Context) {
		c := newCluster(ctx, nil)
		app := createApp(ctx, hubApp("late-cluster").Cluster(c).Build())
		w := expectOnlyWork(ctx, app, c, workName(app))
		late := fmt.Sprintf("late%d", clusterSeq.Add(1))
		editApp(ctx, app, func(a *argov1alpha1.Application) { a.Annotations[apps.AnnotationOCMManagedCluster] = late })
		expectCondition(ctx, app, pullmodel.ConditionInvalidSpec, "does not exist", "kept unchanged")
		expectUntouched(ctx, w)

		ensureNamespace(ctx, late)
		Expect(k8s.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: late},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}})).To(Succeed())
		expectOnlyWork(ctx, app, late, workName(app))
		Eventually(func() []argov1alpha1.ApplicationCondition { return propagationConditions(ctx, app) }).Should(BeEmpty())
	})

	It("deletes the work and clears the condition of an invalid Application that is then unmarked", func(ctx context.Context) {
		c := newCluster(ctx, nil)
		app := createApp(ctx, hubApp("invalid-then-unmarked").Cluster(c).Build())
		w := expectOnlyWork(ctx, app, c, workName(app))
		editApp(ctx, app, func(a *argov1alpha1.Application) { a.Labels[apps.LabelPullToOCMManagedCluster] = "True" })
		expectCondition(ctx, app, pullmodel.ConditionInvalidSpec, "is neither")
		expectUntouched(ctx, w)

		editApp(ctx, app, func(a *argov1alpha1.Application) { a.Labels[apps.LabelPullToOCMManagedCluster] = "false" })
		expectNoWork(ctx, client.ObjectKeyFromObject(app))
		Eventually(func() []argov1alpha1.ApplicationCondition { return propagationConditions(ctx, app) }).Should(BeEmpty())
	})

	It("never writes to an Application that is not marked", func(ctx context.Context) {
		Eventually(framework.Settled(propagation.ControllerName, 500*time.Millisecond)).Should(BeTrue())
		seen := framework.Reconciles(propagation.ControllerName)
		app := createApp(ctx, hubApp("never-marked").Label(apps.LabelPullToOCMManagedCluster, "false").Cluster("no-such-cluster").Build())
		Eventually(func() float64 { return framework.Reconciles(propagation.ControllerName) }).Should(BeNumerically(">", seen))
		Consistently(func() int { return writes.Of("applications", app.Name) }).Should(BeZero())
		Expect(getApp(ctx, app).ResourceVersion).To(Equal(app.ResourceVersion))
	})
})
