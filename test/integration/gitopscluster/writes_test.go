package gitopscluster_test

import (
	"context"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// apiWrites counts, per namespace, every write the controller's client sends to the API
// server, no-op patches included (which a resourceVersion check cannot see).
var apiWrites sync.Map // namespace -> *atomic.Int64

func countWrite(obj client.Object) {
	n, _ := apiWrites.LoadOrStore(obj.GetNamespace(), new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
}

// writesIn is how many writes the controller sent for objects in namespace.
func writesIn(namespace string) int64 {
	if n, ok := apiWrites.Load(namespace); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

// newCountingClient is the manager's NewClient: the default client, counting writes.
func newCountingClient(cfg *rest.Config, opts client.Options) (client.Client, error) {
	c, err := client.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	return &countingClient{Client: c}, nil
}

type countingClient struct{ client.Client }

func (c *countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	countWrite(obj)
	return c.Client.Create(ctx, obj, opts...)
}

func (c *countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	countWrite(obj)
	return c.Client.Update(ctx, obj, opts...)
}

func (c *countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	countWrite(obj)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *countingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	countWrite(obj)
	return c.Client.Delete(ctx, obj, opts...)
}

func (c *countingClient) Status() client.SubResourceWriter {
	return &countingStatus{SubResourceWriter: c.Client.Status()}
}

type countingStatus struct{ client.SubResourceWriter }

func (s *countingStatus) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	countWrite(obj)
	return s.SubResourceWriter.Create(ctx, obj, sub, opts...)
}

func (s *countingStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	countWrite(obj)
	return s.SubResourceWriter.Update(ctx, obj, opts...)
}

func (s *countingStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	countWrite(obj)
	return s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}
