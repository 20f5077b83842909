// Package cabundle reads the CA bundle a set's exporters trust, for both controllers: the
// instance controller writes it into config Secrets, the set controller's diagnosis counts
// failures against it. One reader and one memo, so both see the same bundle.
package cabundle

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/internal/state"
)

// TTL bounds how long a CA bundle read is reused; a rotated CA reaches the config Secrets
// within it (the set controller also looks at every set again within its resync).
const TTL = 30 * time.Second

// Reader reads a set's CA bundle uncached and remembers it per set for TTL.
type Reader struct {
	api   client.Reader
	clock clock.PassiveClock
	memo  *state.Memo[entry]
}

type entry struct {
	source string // ConfigMap name/key
	pem    []byte // never modified once remembered
	at     time.Time
}

// New returns a Reader whose memo is registered in mem.
func New(mem *state.Memory, api client.Reader, clk clock.PassiveClock) *Reader {
	return &Reader{api: api, clock: clk, memo: state.Register[entry](mem, "ca")}
}

// Get returns the PEM bundle the set's exporters trust (the class's ConfigMap, or the
// namespace's default one), or the problem a person must fix. The ConfigMap is read
// uncached (caching every ConfigMap of the cluster to watch one would cost memory), and a
// bundle found is reused for TTL, so a busy set does not cost a read per reconcile.
func (r *Reader) Get(ctx context.Context, set *vtv1alpha1.ExporterSet, class *vtv1alpha1.VirtualTargetClass) (ca []byte, problem string, err error) {
	name, key := objects.DefaultCAConfigMap, objects.DefaultCAKey
	if ref := class.Spec.CABundleConfigMapRef; ref != nil {
		name, key = ref.Name, ref.Key
		if key == "" {
			key = vtv1alpha1.DefaultCABundleKey
		}
	}
	setKey, source := objects.SetKey(set), name+"/"+key
	if e, ok := r.memo.ForSet(setKey); ok && e.source == source && r.clock.Since(e.at) < TTL {
		return e.pem, "", nil
	}
	var cm corev1.ConfigMap
	if err := r.api.Get(ctx, client.ObjectKey{Namespace: set.Namespace, Name: name}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			r.memo.DropSet(setKey)
			return nil, fmt.Sprintf("CA bundle ConfigMap %s/%s not found", set.Namespace, name), nil
		}
		return nil, "", fmt.Errorf("reading CA bundle ConfigMap %s: %w", name, err)
	}
	pem, ok := cm.Data[key]
	if !ok {
		if b, bin := cm.BinaryData[key]; bin {
			pem, ok = string(b), true
		}
	}
	if !ok || pem == "" {
		r.memo.DropSet(setKey)
		return nil, fmt.Sprintf("CA bundle ConfigMap %s/%s has no key %q", set.Namespace, name, key), nil
	}
	ca = []byte(pem)
	r.memo.PutSet(setKey, entry{source: source, pem: ca, at: r.clock.Now()})
	return ca, "", nil
}

// Known is the CA bundle last read for the set (key namespace/name), nil when none was read:
// read once per pass, an input of its diagnosis. The bundle is shared, never modified.
func (r *Reader) Known(set string) []byte {
	e, ok := r.memo.ForSet(set)
	if !ok {
		return nil
	}
	if e.pem == nil {
		return []byte{}
	}
	return e.pem
}
