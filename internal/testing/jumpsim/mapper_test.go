package jumpsim

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper answers Pods and fails everything else, counting the questions.
type countingMapper struct {
	meta.RESTMapper
	asked int
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.asked++
	if gk.Kind != "Pod" {
		return nil, errors.New("no kind")
	}
	return &meta.RESTMapping{Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Scope: meta.RESTScopeNamespace}, nil
}

func TestCachedMapperRemembersMappingsNotMisses(t *testing.T) {
	inner := &countingMapper{}
	m := &cachedMapper{RESTMapper: inner}
	pod := schema.GroupKind{Kind: "Pod"}
	for range 3 {
		if got, err := m.RESTMapping(pod, "v1"); err != nil || got.Resource.Resource != "pods" {
			t.Fatalf("Pod: %v %v", got, err)
		}
	}
	if inner.asked != 1 {
		t.Errorf("asked the dynamic mapper %d times for one mapping, want 1", inner.asked)
	}
	if _, err := m.RESTMapping(pod); err != nil || inner.asked != 2 {
		t.Errorf("other versions are another question: asked %d, %v", inner.asked, err)
	}
	for range 2 {
		if _, err := m.RESTMapping(schema.GroupKind{Group: "x", Kind: "Widget"}); err == nil {
			t.Fatal("a kind the server does not have was mapped")
		}
	}
	if inner.asked != 4 {
		t.Errorf("misses must be asked again (a CRD may be installed): asked %d, want 4", inner.asked)
	}
}
