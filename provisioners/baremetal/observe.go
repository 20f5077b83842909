package baremetal

import (
	"context"
	"errors"
	"fmt"

	"github.com/exporterset/exporterset/provisioner"
)

// Reasons of the ExternalStates that ObserveExternal reports.
const (
	// ReasonNotCreated: the Exporter records no host; CreateExternal has not succeeded yet.
	ReasonNotCreated = "NotCreated"
	// ReasonNotFound: the recorded host has no directory for the instance.
	ReasonNotFound = "NotFound"
	// ReasonProcessExited: QEMU or the exporter is not running (and the exporter did not
	// exit with status 0).
	ReasonProcessExited = "ProcessExited"
	// ReasonExporterExited: the exporter exited with status 0, its work done (Exited).
	ReasonExporterExited = "ExporterExited"
	// ReasonHostUnreachable: the instance's host does not answer.
	ReasonHostUnreachable = "HostUnreachable"
	// ReasonAuthenticationRefused: the instance's host refuses the credentials' key.
	ReasonAuthenticationRefused = "AuthenticationRefused"
	// ReasonHostKeyMismatch: the instance's host key does not verify against known_hosts.
	ReasonHostKeyMismatch = "HostKeyMismatch"
	// ReasonHostRemoved: the class no longer lists the instance's host.
	ReasonHostRemoved = "HostRemoved"
)

// ObserveExternal reports the instance's state on its recorded host: Ready while QEMU and the
// exporter both run; Exited (ExporterExited) when the exporter exited with status 0, as it
// does after a lease when the set recycles its exporters, whatever QEMU's state; Failed
// (ProcessExited, with the exit statuses the host recorded and the end of the logs) when a
// process exited otherwise: another status, killed, or QEMU while the exporter runs; Gone
// when the host has no such instance or no host is recorded yet.
//
// Unlike provisioner.ExternalProvisioner's general rule, a host that cannot be reached, that
// refuses the key or whose host key does not verify makes the instance Failed
// (HostUnreachable, AuthenticationRefused, HostKeyMismatch), not an error: an instance is
// bound to its host, so the set can only keep its size by replacing the instance on another
// host, and a dead host must not hold the set. Only when the caller's context ended first, or
// the parameters or the credentials Secret cannot be used, is an error returned.
func (p *Provisioner) ObserveExternal(ctx context.Context, req *provisioner.Request) (provisioner.ExternalState, error) {
	if req.Exporter == nil {
		return provisioner.ExternalState{}, provisioner.Errorf("qemu-baremetal: ObserveExternal needs the Exporter")
	}
	name := req.Exporter.Annotations[AnnotationHost]
	if name == "" {
		return provisioner.ExternalState{Phase: provisioner.ExternalGone, Reason: ReasonNotCreated,
			Message: fmt.Sprintf("no lab host is recorded for instance %s", req.Exporter.Name)}, nil
	}
	t, err := p.target(req)
	if err != nil {
		return provisioner.ExternalState{}, err
	}
	ref, err := instanceRef(req)
	if err != nil {
		return provisioner.ExternalState{}, err
	}
	h, ok := t.params.HostByName(name)
	if !ok {
		return provisioner.ExternalState{Phase: provisioner.ExternalFailed, Reason: ReasonHostRemoved,
			Message: fmt.Sprintf("instance %s runs on lab host %q, which the class no longer lists", ref.Name, name)}, nil
	}
	var st Status
	err = p.onHost(ctx, t, h, func(m *Machine) error {
		var err error
		st, err = m.Observe(ctx, ref)
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			if state, ok := hostFailure(err); ok {
				return state, nil
			}
		}
		return provisioner.ExternalState{}, provisioner.Transient(fmt.Errorf("qemu-baremetal: observing instance %s on lab host %q: %w", ref.Name, h.Name, err))
	}
	return stateOf(h, ref, st), nil
}

// hostFailure maps the errors that say a host cannot serve the instance to a Failed state
// whose message names the host and quotes the cause (the fingerprints, for a host key).
func hostFailure(err error) (provisioner.ExternalState, bool) {
	var ue *UnreachableError
	var ae *AuthError
	var he *HostKeyError
	failed := func(reason string, e error) (provisioner.ExternalState, bool) {
		return provisioner.ExternalState{Phase: provisioner.ExternalFailed, Reason: reason, Message: e.Error()}, true
	}
	switch {
	case errors.As(err, &he):
		return failed(ReasonHostKeyMismatch, he)
	case errors.As(err, &ae):
		return failed(ReasonAuthenticationRefused, ae)
	case errors.As(err, &ue):
		return failed(ReasonHostUnreachable, ue)
	}
	return provisioner.ExternalState{}, false
}

// stateOf maps what Machine.Observe saw on h to an ExternalState.
func stateOf(h Host, ref InstanceRef, st Status) provisioner.ExternalState {
	if st.Phase != PhaseGone && st.Meta != nil && st.Meta.UID != ref.UID {
		// The directory is another Exporter's of the same name: ours does not exist. The
		// inventory sweep removes the other one.
		return provisioner.ExternalState{Phase: provisioner.ExternalGone, Reason: ReasonNotFound,
			Message: fmt.Sprintf("lab host %q holds instance %s of UID %q, not %q", h.Name, ref.Name, st.Meta.UID, ref.UID)}
	}
	switch st.Phase {
	case PhaseRunning:
		return provisioner.ExternalState{Phase: provisioner.ExternalReady}
	case PhaseExited:
		if st.ExporterExit != nil && *st.ExporterExit == 0 {
			return provisioner.ExternalState{Phase: provisioner.ExternalExited, Reason: ReasonExporterExited,
				Message: fmt.Sprintf("lab host %q: %s", h.Name, st.Message)}
		}
		return provisioner.ExternalState{Phase: provisioner.ExternalFailed, Reason: ReasonProcessExited,
			Message: fmt.Sprintf("lab host %q: %s", h.Name, st.Message)}
	default:
		return provisioner.ExternalState{Phase: provisioner.ExternalGone, Reason: ReasonNotFound,
			Message: fmt.Sprintf("lab host %q has no instance %s", h.Name, ref.Name)}
	}
}
