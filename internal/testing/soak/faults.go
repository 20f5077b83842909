package soak

import (
	"context"
	"errors"
	"math/rand"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Faults decides which of the reconciler's API calls fail. The errors are the ones a real
// API server returns under contention and load: 409 Conflict on writes, 429 Too Many
// Requests and 500 Internal Error on reads and writes. They are returned before the call is
// made, so the object is never changed by a failed call: the reconciler must treat them as
// "try again", never as "gone" or "done".
type Faults struct {
	mu        sync.Mutex
	rng       *rand.Rand
	writeRate float64
	readRate  float64

	conflicts, throttled, internal atomic.Int64
}

// NewFaults returns Faults drawing from seed, injecting nothing until SetRates.
func NewFaults(seed int64) *Faults { return &Faults{rng: rand.New(rand.NewSource(seed))} }

// SetRates sets the fraction of writes and of reads that fail.
func (f *Faults) SetRates(write, read float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writeRate, f.readRate = write, read
}

// Rates returns the fractions of writes and reads that fail.
func (f *Faults) Rates() (write, read float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writeRate, f.readRate
}

// Injected returns how many errors of each kind were returned.
func (f *Faults) Injected() (conflicts, throttled, internal int64) {
	return f.conflicts.Load(), f.throttled.Load(), f.internal.Load()
}

// errInjected is the cause of every injected error, so a log line can tell them apart.
var errInjected = errors.New("soak: injected fault")

// pick returns the error for one call, or nil. write calls may conflict; create calls may not
// (the API server answers a create with AlreadyExists, never Conflict).
func (f *Faults) pick(obj client.Object, write, mayConflict bool) error {
	f.mu.Lock()
	rate := f.readRate
	if write {
		rate = f.writeRate
	}
	if rate <= 0 || f.rng.Float64() >= rate {
		f.mu.Unlock()
		return nil
	}
	kind := f.rng.Intn(3)
	f.mu.Unlock()
	if kind == 0 && !mayConflict {
		kind = 1
	}
	name := ""
	if obj != nil {
		name = obj.GetName()
	}
	switch kind {
	case 0:
		f.conflicts.Add(1)
		return apierrors.NewConflict(schema.GroupResource{Resource: "soak"}, name, errInjected)
	case 1:
		f.throttled.Add(1)
		return apierrors.NewTooManyRequests(errInjected.Error(), 1)
	default:
		f.internal.Add(1)
		return apierrors.NewInternalError(errInjected)
	}
}

// Client wraps c (the manager's cached client) so that calls fail as f decides. The
// manager's cache itself is untouched: only what the reconciler asks goes through f.
func (f *Faults) Client(c client.Client) client.Client { return &faultyClient{Client: c, f: f} }

// Reader wraps r (the manager's uncached API reader) in the same way.
func (f *Faults) Reader(r client.Reader) client.Reader { return &faultyReader{r: r, f: f} }

type faultyReader struct {
	r client.Reader
	f *Faults
}

func (fr *faultyReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := fr.f.pick(obj, false, false); err != nil {
		return err
	}
	return fr.r.Get(ctx, key, obj, opts...)
}

func (fr *faultyReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := fr.f.pick(nil, false, false); err != nil {
		return err
	}
	return fr.r.List(ctx, list, opts...)
}

// faultyClient embeds the real client for everything it does not intercept (Scheme,
// RESTMapper, Apply, which the reconciler does not use).
type faultyClient struct {
	client.Client
	f *Faults
}

func (c *faultyClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.f.pick(obj, false, false); err != nil {
		return err
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *faultyClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.f.pick(nil, false, false); err != nil {
		return err
	}
	return c.Client.List(ctx, list, opts...)
}

func (c *faultyClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := c.f.pick(obj, true, false); err != nil {
		return err
	}
	return c.Client.Create(ctx, obj, opts...)
}

func (c *faultyClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if err := c.f.pick(obj, true, true); err != nil {
		return err
	}
	return c.Client.Delete(ctx, obj, opts...)
}

func (c *faultyClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := c.f.pick(obj, true, true); err != nil {
		return err
	}
	return c.Client.Update(ctx, obj, opts...)
}

func (c *faultyClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := c.f.pick(obj, true, true); err != nil {
		return err
	}
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *faultyClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	if err := c.f.pick(obj, true, false); err != nil {
		return err
	}
	return c.Client.DeleteAllOf(ctx, obj, opts...)
}

func (c *faultyClient) Status() client.SubResourceWriter {
	return &faultyStatus{SubResourceWriter: c.Client.Status(), f: c.f}
}

func (c *faultyClient) SubResource(name string) client.SubResourceClient {
	return &faultySubResource{SubResourceClient: c.Client.SubResource(name), f: c.f}
}

type faultyStatus struct {
	client.SubResourceWriter
	f *Faults
}

func (s *faultyStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if err := s.f.pick(obj, true, true); err != nil {
		return err
	}
	return s.SubResourceWriter.Update(ctx, obj, opts...)
}

func (s *faultyStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if err := s.f.pick(obj, true, true); err != nil {
		return err
	}
	return s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

type faultySubResource struct {
	client.SubResourceClient
	f *Faults
}

func (s *faultySubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if err := s.f.pick(obj, true, true); err != nil {
		return err
	}
	return s.SubResourceClient.Update(ctx, obj, opts...)
}

func (s *faultySubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if err := s.f.pick(obj, true, true); err != nil {
		return err
	}
	return s.SubResourceClient.Patch(ctx, obj, patch, opts...)
}
