package baremetal

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// maxParallelHosts bounds how many hosts are asked at once by InventoryExternal, placement
// and Cleanup: enough that one dead host does not delay the others, few enough not to open
// a burst of SSH connections from one reconcile.
const maxParallelHosts = 8

// LabInstanceKind is the ExternalResource kind of an instance on a lab host.
const LabInstanceKind = "LabInstance"

// instanceRef identifies req's instance on the hosts.
func instanceRef(req *provisioner.Request) (InstanceRef, error) {
	if req.Exporter == nil || req.Set == nil {
		return InstanceRef{}, provisioner.Errorf("qemu-baremetal: the request needs the Exporter and its set")
	}
	ref := InstanceRef{Namespace: req.Exporter.Namespace, Set: req.Set.Name, Name: req.Exporter.Name, UID: string(req.Exporter.UID)}
	if err := ref.validate(); err != nil {
		return InstanceRef{}, provisioner.Internal(fmt.Errorf("qemu-baremetal: %w", err))
	}
	return ref, nil
}

// CreateExternal starts the instance on a lab host with req.ExporterConfig as the exporter's
// config, and returns AnnotationHost naming the host. An Exporter that records a host already
// is created there again (Machine.Create is idempotent); otherwise an instance found on a host
// with the Exporter's UID is adopted (created before a crash, its host never recorded), and a
// new one is placed with Place on the hosts that answered, counting their instances.
//
// No free slot and unreachable hosts are transient errors; a host that refuses the key or
// whose host key does not verify is invalid input, for a person to fix.
func (p *Provisioner) CreateExternal(ctx context.Context, req *provisioner.Request) (map[string]string, error) {
	if req.Exporter == nil {
		return nil, provisioner.Errorf("qemu-baremetal: CreateExternal needs the Exporter")
	}
	if len(req.ExporterConfig) == 0 {
		return nil, provisioner.Invalid(errors.New("qemu-baremetal: the request carries no exporter config: a lab host runs the exporter itself " +
			"and needs the rendered config, which the controller's hosted mode (provisioner.HostedProvisioner) hands over in Request.ExporterConfig"))
	}
	t, err := p.target(req)
	if err != nil {
		return nil, err
	}
	ref, err := instanceRef(req)
	if err != nil {
		return nil, err
	}
	var h Host
	release := func() {}
	if name := req.Exporter.Annotations[AnnotationHost]; name != "" {
		var ok bool
		if h, ok = t.params.HostByName(name); !ok {
			return nil, provisioner.Invalid(fmt.Errorf("qemu-baremetal: instance %s is recorded on lab host %q, which the class no longer lists", ref.Name, name))
		}
	} else if h, release, err = p.place(ctx, t, ref); err != nil {
		return nil, err
	}
	err = p.onHost(ctx, t, h, func(m *Machine) error {
		return m.Create(ctx, t.params.LaunchSpec(h, ref, req.ExporterConfig))
	})
	release()
	if err != nil {
		return nil, hostErr(fmt.Sprintf("creating instance %s on lab host %q", ref.Name, h.Name), err)
	}
	return map[string]string{AnnotationHost: h.Name}, nil
}

// hostErr classifies an error of one host: a refused key or host key is invalid input (a
// person must fix the Secret or the host; retrying does not help), anything else transient.
// The errors of this package name the host already; what says which operation failed.
func hostErr(what string, err error) error {
	if isRefusal(err) {
		return provisioner.Invalid(fmt.Errorf("qemu-baremetal: %s: %w", what, err))
	}
	return provisioner.Transient(fmt.Errorf("qemu-baremetal: %s: %w", what, err))
}

// place chooses the host of a new instance and returns the release of its reservation. It
// returns the host of an instance with ref's UID found there already.
func (p *Provisioner) place(ctx context.Context, t *target, ref InstanceRef) (Host, func(), error) {
	since := p.now()
	invs := p.inventoryAll(ctx, t)
	used := map[string]int{}
	seen := map[string]bool{}
	unreachable := map[string]bool{}
	var refused, failed []error
	for _, inv := range invs {
		if inv.err != nil {
			// A host that cannot be asked cannot be counted either: it is skipped as Place
			// skips unreachable hosts, and its error is quoted if no host is left.
			unreachable[inv.host.Name] = true
			if isRefusal(inv.err) {
				refused = append(refused, inv.err)
			} else {
				failed = append(failed, inv.err)
			}
			continue
		}
		for _, m := range inv.metas {
			if m.Namespace == ref.Namespace && m.Set == ref.Set && m.Instance == ref.Name && m.UID == ref.UID {
				return inv.host, func() {}, nil
			}
			seen[instanceKey(m.Namespace, m.Set, m.Instance)] = true
		}
		used[inv.host.Name] = len(inv.metas)
	}
	h, release, err := p.placing.place(t.params.Hosts, t.params.Root, ref, used, seen, unreachable, since, p.now())
	if err == nil {
		return h, func() { release(p.now()) }, nil
	}
	var counts []string
	for _, inv := range invs {
		if inv.err == nil {
			counts = append(counts, fmt.Sprintf("%s %d/%d", inv.host.Name, used[inv.host.Name], inv.host.Slots))
		}
	}
	var skipped string
	if len(refused)+len(failed) > 0 {
		skipped = "; skipped: " + joinErrs(append(refused, failed...)).Error()
	}
	err = fmt.Errorf("qemu-baremetal: placing instance %s: %w (instances/slots of the hosts that answered: %s)%s",
		ref.Name, err, orNone(strings.Join(counts, ", ")), skipped)
	if len(refused) == len(invs) {
		// Every host refuses us: no retry helps until a person fixes the Secret or hosts.
		return Host{}, nil, provisioner.Invalid(err)
	}
	return Host{}, nil, provisioner.Transient(err)
}

// orNone returns s, or "none".
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// hostInventory is what one host's Inventory returned.
type hostInventory struct {
	host  Host
	metas []Meta
	err   error
}

// inventoryAll runs Inventory on every host of t, a few at a time, in the order of the
// parameters.
func (p *Provisioner) inventoryAll(ctx context.Context, t *target) []hostInventory {
	out := make([]hostInventory, len(t.params.Hosts))
	sem := make(chan struct{}, maxParallelHosts)
	var wg sync.WaitGroup
	for i, h := range t.params.Hosts {
		out[i].host = h
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i].err = p.onHost(ctx, t, h, func(m *Machine) error {
				var err error
				out[i].metas, err = m.Inventory(ctx)
				return err
			})
		})
	}
	wg.Wait()
	return out
}

// InventoryExternal lists the instances of req.Set on every host, whatever their state. A
// host that cannot be asked is skipped (its orphans are swept once it answers again); when
// no host answers, that is an error, so that an empty list always means there is nothing.
func (p *Provisioner) InventoryExternal(ctx context.Context, req *provisioner.Request) ([]provisioner.ExternalResource, error) {
	if req.Set == nil {
		return nil, provisioner.Errorf("qemu-baremetal: InventoryExternal needs the set")
	}
	t, err := p.target(req)
	if err != nil {
		return nil, err
	}
	var out []provisioner.ExternalResource
	var errs []error
	for _, inv := range p.inventoryAll(ctx, t) {
		if inv.err != nil {
			errs = append(errs, inv.err)
			continue
		}
		sort.Slice(inv.metas, func(i, j int) bool { return inv.metas[i].Dir < inv.metas[j].Dir })
		for _, m := range inv.metas {
			if m.Namespace != req.Set.Namespace || m.Set != req.Set.Name {
				continue
			}
			out = append(out, provisioner.ExternalResource{
				Instance: m.Instance, InstanceUID: m.UID, Kind: LabInstanceKind, Name: inv.host.Name + ":" + m.Dir,
				Annotations: map[string]string{AnnotationHost: inv.host.Name},
			})
		}
	}
	if len(errs) == len(t.params.Hosts) {
		return nil, provisioner.Transient(fmt.Errorf("qemu-baremetal: no lab host answered: %w", joinErrs(errs)))
	}
	return out, nil
}

// Cleanup honours the class's reclaimPolicy for a retired instance, as the kubevirt
// provisioner does: Retain leaves QEMU and the exporter running on their host for
// inspection; Delete, the default, stops both and removes the instance directory on the
// recorded host, or on every host when none is recorded (Stop of an absent instance
// succeeds). A directory of another UID is left alone: it is another instance's. A host that
// cannot be reached is an error, retried: nothing there may be taken as cleaned up. A
// recorded host the class no longer lists is not managed any more, so there is nothing to
// do.
func (p *Provisioner) Cleanup(ctx context.Context, req *provisioner.Request) error {
	t, err := p.target(req)
	if err != nil {
		return err
	}
	if req.Exporter == nil {
		return nil // nothing names an instance
	}
	if req.Class != nil && req.Class.Spec.ReclaimPolicy == vtv1alpha1.ReclaimRetain {
		return nil
	}
	ref, err := instanceRef(req)
	if err != nil {
		return err
	}
	hosts := t.params.Hosts
	if name := req.Exporter.Annotations[AnnotationHost]; name != "" {
		h, ok := t.params.HostByName(name)
		if !ok {
			return nil
		}
		hosts = []Host{h}
	}
	errs := make([]error, len(hosts))
	sem := make(chan struct{}, maxParallelHosts)
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = p.onHost(ctx, t, h, func(m *Machine) error {
				st, err := m.Observe(ctx, ref)
				if err != nil {
					return err
				}
				if st.Phase == PhaseGone || st.Meta != nil && ref.UID != "" && st.Meta.UID != ref.UID {
					return nil
				}
				return m.Stop(ctx, ref)
			})
			if errs[i] != nil {
				errs[i] = fmt.Errorf("stopping instance %s on lab host %q: %w", ref.Name, h.Name, errs[i])
			}
		})
	}
	wg.Wait()
	if err := joinErrs(errs); err != nil {
		return provisioner.Transient(fmt.Errorf("qemu-baremetal: %w", err))
	}
	return nil
}

// errList is errors.Join on one line: conditions quote messages, and errors.Join's newlines
// would break them.
type errList []error

// Error joins the messages with "; ".
func (l errList) Error() string {
	msgs := make([]string, len(l))
	for i, err := range l {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap returns the errors, for errors.Is and errors.As.
func (l errList) Unwrap() []error { return l }

// joinErrs returns the non-nil errors as one error, nil when there are none.
func joinErrs(errs []error) error {
	var l errList
	for _, err := range errs {
		if err != nil {
			l = append(l, err)
		}
	}
	if len(l) == 0 {
		return nil
	}
	return l
}
