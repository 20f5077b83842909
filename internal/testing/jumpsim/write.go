package jumpsim

import (
	"context"
	"encoding/json"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// conflictBackoff spreads retries of a conflicting write over about a second: under load
// (hundreds of Exporters, several writers per object) the default four quick steps run out.
var conflictBackoff = wait.Backoff{Steps: 8, Duration: 5 * time.Millisecond, Factor: 2, Jitter: 0.5}

// writeStatus applies mutate to obj and, when mutate reports a change, writes obj's status
// subresource with a merge patch guarded by obj's resourceVersion. On a conflict it re-reads
// obj from the apiserver and applies mutate again, so a stale cached copy never overwrites a
// newer write by another component, the controller under test or the test itself. It
// reports whether it wrote. If obj was replaced by a namesake meanwhile it returns NotFound.
func (s *Simulator) writeStatus(ctx context.Context, obj client.Object, mutate func() bool) (bool, error) {
	return s.write(ctx, obj, mutate, true)
}

// writeObject is writeStatus for the main resource (metadata and spec).
func (s *Simulator) writeObject(ctx context.Context, obj client.Object, mutate func() bool) (bool, error) {
	return s.write(ctx, obj, mutate, false)
}

func (s *Simulator) write(ctx context.Context, obj client.Object, mutate func() bool, status bool) (bool, error) {
	wrote := false
	first := true
	uid := obj.GetUID()
	err := retry.RetryOnConflict(conflictBackoff, func() error {
		if !first {
			key := client.ObjectKeyFromObject(obj)
			resetObject(obj)
			if err := s.reader.Get(ctx, key, obj); err != nil {
				return err
			}
			if obj.GetUID() != uid {
				// Deleted and re-created under the same name: what mutate decided was about
				// the old object. Report it gone; the new one gets its own reconcile.
				return apierrors.NewNotFound(schema.GroupResource{Resource: typeName(obj)}, key.Name)
			}
		}
		first = false
		base := obj.DeepCopyObject().(client.Object)
		if !mutate() {
			return nil
		}
		var patch client.Patch = client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})
		if l, ok := obj.(*jsv1.Lease); ok && status {
			patch = withLeaseEnded{Patch: patch, ended: l.Status.Ended}
		}
		var err error
		if status {
			err = s.client.Status().Patch(ctx, obj, patch)
		} else {
			err = s.client.Patch(ctx, obj, patch)
		}
		if err == nil {
			wrote = true
		}
		return err
	})
	return wrote, err
}

// withLeaseEnded adds status.ended to a Lease status merge patch. The field is required
// (never omitted), and a merge patch against a Lease without status would otherwise leave it
// out and fail validation.
type withLeaseEnded struct {
	client.Patch
	ended bool
}

func (p withLeaseEnded) Data(obj client.Object) ([]byte, error) {
	data, err := p.Patch.Data(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	st, _ := m["status"].(map[string]any)
	if st == nil {
		st = map[string]any{}
		m["status"] = st
	}
	st["ended"] = p.ended
	return json.Marshal(m)
}

// resetObject zeroes *obj before a Get into it: decoding into a used object would merge
// maps (labels, annotations, Secret data) instead of replacing them.
func resetObject(obj client.Object) {
	v := reflect.ValueOf(obj).Elem()
	v.Set(reflect.Zero(v.Type()))
}
