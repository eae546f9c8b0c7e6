package appstatus_test

import (
	"context"
	"fmt"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/appwrite"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
)

// countingReader is the re-read after a conflict: counts how often PatchApplication
// needed it.
type countingReader struct {
	client.Reader
	gets int
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.gets++
	return r.Reader.Get(ctx, key, obj, opts...)
}

func setHealth(status health.HealthStatusCode) func(*argov1alpha1.Application) bool {
	return func(app *argov1alpha1.Application) bool {
		if app.Status.Health.Status == status {
			return false
		}
		app.Status.Health.Status = status
		return true
	}
}

func setSync(status argov1alpha1.SyncStatusCode) func(*argov1alpha1.Application) bool {
	return func(app *argov1alpha1.Application) bool {
		if app.Status.Sync.Status == status {
			return false
		}
		app.Status.Sync.Status = status
		return true
	}
}

// writeThenSomeoneElse has the controller write the Application (from cached, with a new
// tracker) and someone else write it after; it returns the tracker and the re-read
// counter, which has not been used yet.
func writeThenSomeoneElse(ctx context.Context, cached *argov1alpha1.Application) (*appwrite.Writes, *countingReader) {
	GinkgoHelper()
	tracker := &appwrite.Writes{}
	reader := &countingReader{Reader: k8s}
	_, _, err := appwrite.PatchApplication(ctx, k8s, reader, tracker, cached, setHealth(health.HealthStatusProgressing))
	Expect(err).NotTo(HaveOccurred())
	other := getApp(ctx, Default, cached)
	other.Annotations = map[string]string{"example.com/someone": "else"}
	Expect(k8s.Update(ctx, other)).To(Succeed())
	Expect(reader.gets).To(BeZero())
	return tracker, reader
}

// Two writes of the same change (the work agent's feedback, then the agent's report)
// reach the application status controller before its cache has seen the first.
var _ = Describe("Writing a hub Application on the controller's own last write", func() {
	var (
		app   *argov1alpha1.Application
		stale *argov1alpha1.Application // what a cache that has not seen the first write holds
	)
	BeforeEach(func(ctx context.Context) {
		// Not marked: the running controller leaves it alone, only the spec writes it.
		app = createApplication(ctx, builders.Application(fmt.Sprintf("own-writes-%d", seq.Add(1))).Build())
		stale = app.DeepCopy()
	})

	It("builds the second write on the first: no conflict, no re-read, both changes kept", func(ctx context.Context) {
		var tracker appwrite.Writes
		reader := &countingReader{Reader: k8s}

		_, written, err := appwrite.PatchApplication(ctx, k8s, reader, &tracker, stale, setHealth(health.HealthStatusProgressing))
		Expect(err).NotTo(HaveOccurred())
		Expect(written).NotTo(BeNil())
		_, written, err = appwrite.PatchApplication(ctx, k8s, reader, &tracker, stale, setSync(argov1alpha1.SyncStatusCodeSynced))
		Expect(err).NotTo(HaveOccurred())
		Expect(written).NotTo(BeNil())

		Expect(reader.gets).To(BeZero(), "the second write met a conflict and re-read the Application")
		got := getApp(ctx, Default, app)
		Expect(got.Status.Health.Status).To(Equal(health.HealthStatusProgressing))
		Expect(got.Status.Sync.Status).To(Equal(argov1alpha1.SyncStatusCodeSynced))

		// Repeating the last change on the lagging cache writes nothing: the controller
		// knows it wrote it.
		_, written, err = appwrite.PatchApplication(ctx, k8s, reader, &tracker, stale, setSync(argov1alpha1.SyncStatusCodeSynced))
		Expect(err).NotTo(HaveOccurred())
		Expect(written).To(BeNil())
		Expect(getApp(ctx, Default, app).ResourceVersion).To(Equal(got.ResourceVersion))

		tracker.Observed(got)
		Expect(tracker.Len()).To(BeZero(), "the tracker kept a write the cache has seen")
	})

	It("without it, the second write on the lagging cache conflicts and re-reads (what the tracker spares)", func(ctx context.Context) {
		reader := &countingReader{Reader: k8s}
		_, _, err := appwrite.PatchApplication(ctx, k8s, reader, nil, stale, setHealth(health.HealthStatusProgressing))
		Expect(err).NotTo(HaveOccurred())
		_, _, err = appwrite.PatchApplication(ctx, k8s, reader, nil, stale, setSync(argov1alpha1.SyncStatusCodeSynced))
		Expect(err).NotTo(HaveOccurred())
		Expect(reader.gets).To(Equal(1))
	})

	It("lets someone else's write win: the cache's newer version is built on, nothing of it lost", func(ctx context.Context) {
		tracker, reader := writeThenSomeoneElse(ctx, stale)
		// The cache (here: a fresh read) shows the other write.
		cached := getApp(ctx, Default, app)

		_, _, err := appwrite.PatchApplication(ctx, k8s, reader, tracker, cached, setSync(argov1alpha1.SyncStatusCodeSynced))
		Expect(err).NotTo(HaveOccurred())
		Expect(reader.gets).To(BeZero())
		got := getApp(ctx, Default, app)
		Expect(got.Annotations).To(HaveKeyWithValue("example.com/someone", "else"))
		Expect(got.Status.Health.Status).To(Equal(health.HealthStatusProgressing))
		Expect(got.Status.Sync.Status).To(Equal(argov1alpha1.SyncStatusCodeSynced))
	})

	It("does not build on its own write once someone else wrote, even if the cache still lags: the conflict re-reads", func(ctx context.Context) {
		tracker, reader := writeThenSomeoneElse(ctx, stale)

		// The cache has seen neither write: the controller's copy is one version behind
		// the server, so the optimistic lock refuses it and the re-read wins.
		_, _, err := appwrite.PatchApplication(ctx, k8s, reader, tracker, stale, setSync(argov1alpha1.SyncStatusCodeSynced))
		Expect(err).NotTo(HaveOccurred())
		Expect(reader.gets).To(Equal(1))
		got := getApp(ctx, Default, app)
		Expect(got.Annotations).To(HaveKeyWithValue("example.com/someone", "else"))
		Expect(got.Status.Sync.Status).To(Equal(argov1alpha1.SyncStatusCodeSynced))
	})
})
