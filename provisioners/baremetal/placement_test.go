package baremetal

import (
	"errors"
	"strings"
	"testing"
)

var labHosts = []Host{
	{Name: "c", Arch: "x86_64", Slots: 2},
	{Name: "a", Arch: "x86_64", Slots: 1},
	{Name: "b", Arch: "x86_64", Slots: 3},
	{Name: "arm", Arch: "aarch64", Slots: 2},
}

func TestPlaceSpreadsAndBreaksTiesByName(t *testing.T) {
	used := map[string]int{}
	var order []string
	// Fill every x86_64 slot (6) one by one, as the reconciler would.
	for range 6 {
		h, err := Place(labHosts, used, nil, "x86_64")
		if err != nil {
			t.Fatalf("after %v: %v", order, err)
		}
		used[h.Name]++
		order = append(order, h.Name)
	}
	want := "a b c b c b"
	if got := strings.Join(order, " "); got != want {
		t.Errorf("placement order %q, want %q", got, want)
	}
	for _, h := range labHosts {
		if used[h.Name] > h.Slots {
			t.Errorf("host %s holds %d > %d slots", h.Name, used[h.Name], h.Slots)
		}
	}
	if used["arm"] != 0 {
		t.Errorf("an x86_64 instance went to the aarch64 host")
	}
	_, err := Place(labHosts, used, nil, "x86_64")
	var nf *NoFreeSlotError
	if !errors.Is(err, ErrNoFreeSlot) || !errors.As(err, &nf) {
		t.Fatalf("full pool: err = %v, want a NoFreeSlotError", err)
	}
	if nf.Hosts != 4 || nf.OtherArch != 1 || nf.Full != 3 || nf.Used != 6 || nf.Slots != 6 || nf.Unreachable != 0 {
		t.Errorf("counts %+v", nf)
	}
	if msg := err.Error(); !strings.Contains(msg, "for x86_64: 4 host(s), 1 of another arch, 0 unreachable, 3 full (6 of 6 slots used)") {
		t.Errorf("message %q", msg)
	}
}

func TestPlaceArchAndAny(t *testing.T) {
	h, err := Place(labHosts, map[string]int{"a": 1, "b": 1, "c": 1}, nil, "aarch64")
	if err != nil || h.Name != "arm" {
		t.Fatalf("aarch64: %+v, %v", h, err)
	}
	h, err = Place(labHosts, map[string]int{"a": 1, "b": 1, "c": 1}, nil, "")
	if err != nil || h.Name != "arm" {
		t.Fatalf("any arch should take the least used host: %+v, %v", h, err)
	}
	_, err = Place(labHosts, nil, nil, "riscv64")
	var nf *NoFreeSlotError
	if !errors.As(err, &nf) || nf.OtherArch != 4 || nf.Slots != 0 {
		t.Fatalf("riscv64: %v", err)
	}
}

func TestPlaceSkipsUnreachable(t *testing.T) {
	down := map[string]bool{"a": true, "b": true}
	for i := range 2 {
		used := map[string]int{"c": i}
		h, err := Place(labHosts, used, down, "x86_64")
		if err != nil || h.Name != "c" {
			t.Fatalf("with a and b down, pick %d: %+v, %v", i, h, err)
		}
	}
	_, err := Place(labHosts, map[string]int{"c": 2}, down, "x86_64")
	var nf *NoFreeSlotError
	if !errors.As(err, &nf) || nf.Unreachable != 2 || nf.Full != 1 || nf.Slots != 2 {
		t.Fatalf("err = %v (%+v)", err, nf)
	}
	_, err = Place(nil, nil, nil, "")
	if !errors.Is(err, ErrNoFreeSlot) || !strings.Contains(err.Error(), "for any arch: 0 host(s)") {
		t.Fatalf("no hosts: %v", err)
	}
}
