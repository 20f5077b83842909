package provisionertest

import (
	"context"
	"fmt"
	"testing"

	"github.com/exporterset/exporterset/provisioner"
)

// testExternal checks the ExternalProvisioner capability: idempotent create, an inventory
// that matches what was created (and drops what was cleaned up), cleanup of an instance it
// never created, and the behaviour without its remote end. It runs only for provisioners that
// claim the capability.
func (s *suite) testExternal(t *testing.T, ext provisioner.ExternalProvisioner) {
	ctx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(t.Context(), s.cfg.CallTimeout)
	}
	req := s.mustRequest(t)
	req.Exporter = req.Exporter.DeepCopy()
	req.Exporter.UID = "8d3c1f2e-conformance-external" // a UID the provisioner has not seen
	inventory := func(t *testing.T) map[string]provisioner.ExternalResource {
		t.Helper()
		c, cancel := ctx()
		defer cancel()
		setReq := *req
		setReq.Exporter, setReq.ConfigSecretName = nil, ""
		list, err := ext.InventoryExternal(c, &setReq)
		if err != nil {
			t.Fatalf("InventoryExternal: %v", err)
		}
		out := map[string]provisioner.ExternalResource{}
		for _, r := range list {
			out[r.Instance] = r
		}
		return out
	}

	t.Run("CreateIdempotent", func(t *testing.T) {
		c, cancel := ctx()
		defer cancel()
		first, err := ext.CreateExternal(c, req)
		if err != nil {
			t.Fatalf("CreateExternal: %v", err)
		}
		if len(first) == 0 {
			t.Error("CreateExternal returned no annotations: nothing would identify the resources after a restart")
		}
		again, err := ext.CreateExternal(c, req)
		if err != nil {
			t.Fatalf("CreateExternal again (after a restart, or a lost answer): %v", err)
		}
		if fmt.Sprint(first) != fmt.Sprint(again) {
			t.Errorf("CreateExternal is not idempotent: %v, then %v", first, again)
		}
		if st, err := ext.ObserveExternal(c, req); err != nil || st.Phase == provisioner.ExternalGone || st.Phase == "" {
			t.Errorf("ObserveExternal right after CreateExternal: %+v %v, want Pending, Ready or Failed", st, err)
		}
	})
	t.Run("InventoryMatches", func(t *testing.T) {
		got := inventory(t)
		r, ok := got[req.Exporter.Name]
		if !ok || len(got) != 1 {
			t.Fatalf("inventory %v after creating one instance's resources, want exactly %s", got, req.Exporter.Name)
		}
		if r.InstanceUID != "" && r.InstanceUID != string(req.Exporter.UID) {
			t.Errorf("inventory names instance UID %q, want %q", r.InstanceUID, req.Exporter.UID)
		}
	})
	t.Run("UnreachableIsTransient", func(t *testing.T) {
		if s.cfg.Unreachable == nil {
			t.Skip("Config.Unreachable is not set")
		}
		s.cfg.Unreachable(true)
		defer s.cfg.Unreachable(false)
		c, cancel := ctx()
		defer cancel()
		if st, err := ext.ObserveExternal(c, req); err == nil {
			t.Errorf("ObserveExternal without the remote end answered %+v: it must say it cannot tell (an error), not Gone", st)
		} else if provisioner.IsInvalid(err) {
			t.Errorf("ObserveExternal without the remote end: an invalid-input error (%v); it is transient", err)
		}
		if _, err := ext.CreateExternal(c, req); err == nil || provisioner.IsInvalid(err) {
			t.Errorf("CreateExternal without the remote end: %v, want a transient error", err)
		}
		if err := ext.Cleanup(c, req); err == nil || provisioner.IsInvalid(err) {
			t.Errorf("Cleanup without the remote end: %v, want a transient error (nothing may be taken as cleaned up)", err)
		}
	})
	t.Run("CleanupRemovesFromInventory", func(t *testing.T) {
		c, cancel := ctx()
		defer cancel()
		if err := ext.Cleanup(c, req); err != nil {
			t.Fatalf("Cleanup: %v", err)
		}
		if req.Class.Spec.ReclaimPolicy == "Retain" {
			return // kept on purpose
		}
		if got := inventory(t); len(got) != 0 {
			t.Errorf("inventory after Cleanup: %v", got)
		}
		if st, err := ext.ObserveExternal(c, req); err != nil || st.Phase != provisioner.ExternalGone && st.Phase != provisioner.ExternalPending {
			t.Errorf("ObserveExternal after Cleanup: %+v %v, want Gone (or Pending while deletion runs)", st, err)
		}
	})
	t.Run("CleanupUnknownInstance", func(t *testing.T) {
		c, cancel := ctx()
		defer cancel()
		unknown := *req
		unknown.Exporter = req.Exporter.DeepCopy()
		unknown.Exporter.Name, unknown.Exporter.UID, unknown.Exporter.Annotations = "never-created", "never-created-uid", nil
		if err := ext.Cleanup(c, &unknown); err != nil {
			t.Errorf("Cleanup of an instance never created: %v, want nil", err)
		}
	})
}
