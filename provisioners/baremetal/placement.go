package baremetal

import (
	"errors"
	"fmt"
	"sort"
)

// ErrNoFreeSlot is matched (errors.Is) by every *NoFreeSlotError.
var ErrNoFreeSlot = errors.New("no free slot on any lab host")

// NoFreeSlotError says why Place found no host, with counts, so the set's condition tells a
// person whether to add hosts, raise slots or fix a host that cannot be reached.
type NoFreeSlotError struct {
	// Arch is the architecture asked for ("" for any).
	Arch string
	// Hosts is the number of hosts in the class.
	Hosts int
	// OtherArch is the number of hosts skipped for their arch.
	OtherArch int
	// Unreachable is the number of matching hosts skipped because they cannot be reached.
	Unreachable int
	// Full is the number of matching, reachable hosts with every slot in use.
	Full int
	// Used and Slots add up the instances and slots of the matching, reachable hosts.
	Used, Slots int
}

// Error names every count.
func (e *NoFreeSlotError) Error() string {
	arch := e.Arch
	if arch == "" {
		arch = "any arch"
	}
	return fmt.Sprintf("no free slot for %s: %d host(s), %d of another arch, %d unreachable, %d full (%d of %d slots used)",
		arch, e.Hosts, e.OtherArch, e.Unreachable, e.Full, e.Used, e.Slots)
}

// Is makes errors.Is(err, ErrNoFreeSlot) true.
func (e *NoFreeSlotError) Is(target error) bool { return target == ErrNoFreeSlot }

// Place chooses the host for one new instance. used counts the instances each host holds now
// (by host name, from Inventory plus instances being created); unreachable marks hosts that
// failed to answer, which are skipped because an instance placed there could neither start
// nor be observed. Among hosts of the wanted arch ("" matches any) with a free slot it returns
// the least used one, so instances spread and one host's failure takes few of them; ties go to
// the host name that sorts first, so the choice is deterministic.
func Place(hosts []Host, used map[string]int, unreachable map[string]bool, arch string) (Host, error) {
	e := &NoFreeSlotError{Arch: arch, Hosts: len(hosts)}
	var free []Host
	for _, h := range hosts {
		switch {
		case arch != "" && h.Arch != arch:
			e.OtherArch++
		case unreachable[h.Name]:
			e.Unreachable++
		default:
			e.Used += used[h.Name]
			e.Slots += h.Slots
			if used[h.Name] >= h.Slots {
				e.Full++
			} else {
				free = append(free, h)
			}
		}
	}
	if len(free) == 0 {
		return Host{}, e
	}
	sort.Slice(free, func(i, j int) bool {
		ui, uj := used[free[i].Name], used[free[j].Name]
		if ui != uj {
			return ui < uj
		}
		return free[i].Name < free[j].Name
	})
	return free[0], nil
}
