//go:build e2e

package pull_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// applyStory applies the files of examples/story/ in order, as `kubectl apply -f` would,
// up to its last, the ApplicationSet, which it returns for the scenario to apply (after
// its substitutions, and once what the generator reads exists). The first file must bind
// the global ManagedClusterSet to argocd, which the suite keeps bound: it is created only
// when missing (bindGlobalClusterSet). What the story creates goes when the calling
// container's clean-ups run, last made first.
func applyStory(ctx SpecContext, story string) *unstructured.Unstructured {
	GinkgoHelper()
	files, err := framework.ReadExamples(story)
	Expect(err).NotTo(HaveOccurred())
	Expect(len(files)).To(BeNumerically(">=", 2), "examples/%s", story)
	first, last := files[0], files[len(files)-1]
	Expect(first.Objects).To(HaveLen(1), first.Path)
	Expect(first.Objects[0].GetKind()).To(Equal("ManagedClusterSetBinding"), first.Path)
	Expect(first.Objects[0].GetName()).To(Equal(framework.GlobalClusterSet), first.Path)
	Expect(first.Objects[0].GetNamespace()).To(Equal(argoNS), first.Path)
	Expect(last.Objects).To(HaveLen(1), last.Path)
	Expect(last.Objects[0].GroupVersionKind()).To(Equal(appSetGVK), last.Path)

	By("applying examples/" + first.Path + " (the global set is bound for the whole suite already)")
	bindGlobalClusterSet(ctx)
	for _, f := range files[1 : len(files)-1] {
		By("applying examples/" + f.Path)
		for _, obj := range f.Objects {
			Expect(hub.Create(ctx, obj)).To(Succeed(), f.Path)
			DeferCleanup(func(ctx SpecContext) {
				Expect(client.IgnoreNotFound(hub.Delete(ctx, obj))).To(Succeed(), f.Path)
				Eventually(func() bool {
					err := hub.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopy())
					return apierrors.IsNotFound(err)
				}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue(), "%s is not gone", f.Path)
			}, NodeTimeout(2*time.Minute))
		}
	}
	return last.Objects[0]
}
