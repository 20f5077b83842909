package exporterset

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/exporterset/exporterset/exporterset/internal/state"
)

// TestEveryMemoIsRegistered: every memo of the set controller's memory is registered in the
// one state.Memory (memos are made only by state.Register, and newMemory must keep what it
// made), and the contract Board and the CA reader register theirs in the same Memory: one
// forget and one sweep reach them all.
func TestEveryMemoIsRegistered(t *testing.T) {
	r := newTestReconciler()
	m := r.memory
	fields := 0
	v := reflect.ValueOf(m).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		// The fields are unexported, so they are read through their address.
		s, ok := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(state.Store)
		if !ok || v.Type().Field(i).Anonymous {
			continue
		}
		fields++
		if !m.Registered(s) {
			t.Errorf("memo %s is not registered: forget and sweep miss it", v.Type().Field(i).Name)
		}
	}
	if fields < 10 {
		t.Fatalf("found only %d memo fields; the test no longer reads memory", fields)
	}
	// The Board (3) and the CA reader (1) add theirs (the instance controller, made by the
	// front, three more: TestMemoryReachesEveryController in the front).
	if got, want := m.Len(), fields+4; got != want {
		t.Errorf("%d memos registered, want %d (the set controller's %d, the board's and the CA reader's)", got, want, fields)
	}
}
