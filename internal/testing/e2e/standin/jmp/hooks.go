package main

import (
	"context"
	"log"
	"time"

	"github.com/exporterset/exporterset/internal/exportercfg"
	pb "github.com/exporterset/exporterset/internal/testing/e2e/standin/jumpstarterpb"
	"github.com/exporterset/exporterset/internal/testing/leasehook"
)

// leaseWork is a lease change the hook worker acts on, in the order the Status stream
// announced them.
type leaseWork struct {
	lease, client string
	ended         bool
}

// hookWorker runs the config's lease hooks as upstream's exporter does (internal/testing/leasehook)
// and reports around them. It takes the lease changes one at a time, so an afterLease hook
// waits for its lease's beforeLease hook.
type hookWorker struct {
	s     *session
	hooks *exportercfg.Hooks
	work  chan leaseWork
	// ended gets the lease that ended once its afterLease hook is done (exitOnLeaseEnd).
	ended chan<- leaseEvent
	// exit gets the failure of a hook that failed with onFailure exit, once the exporter
	// has reported it and Offline and its lease is over: the exporter unregisters and
	// exits with code 1.
	exit chan string
}

func newHookWorker(s *session, ended chan<- leaseEvent) *hookWorker {
	return &hookWorker{s: s, hooks: s.cfg.Hooks, work: make(chan leaseWork, 16), ended: ended, exit: make(chan string, 1)}
}

// pbStatus is the protocol's value of a status.
var pbStatus = map[leasehook.Status]pb.ExporterStatus{
	leasehook.StatusOffline:               pb.ExporterStatus_EXPORTER_STATUS_OFFLINE,
	leasehook.StatusAvailable:             pb.ExporterStatus_EXPORTER_STATUS_AVAILABLE,
	leasehook.StatusBeforeLeaseHook:       pb.ExporterStatus_EXPORTER_STATUS_BEFORE_LEASE_HOOK,
	leasehook.StatusLeaseReady:            pb.ExporterStatus_EXPORTER_STATUS_LEASE_READY,
	leasehook.StatusAfterLeaseHook:        pb.ExporterStatus_EXPORTER_STATUS_AFTER_LEASE_HOOK,
	leasehook.StatusBeforeLeaseHookFailed: pb.ExporterStatus_EXPORTER_STATUS_BEFORE_LEASE_HOOK_FAILED,
	leasehook.StatusAfterLeaseHookFailed:  pb.ExporterStatus_EXPORTER_STATUS_AFTER_LEASE_HOOK_FAILED,
}

// report sends one report; a controller that cannot be reached loses it, as upstream's
// exporter logs and carries on.
func (w *hookWorker) report(ctx context.Context, r leasehook.Report, release bool) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	req := &pb.ReportStatusRequest{Status: pbStatus[r.Status], Message: &r.Message}
	if release {
		req.ReleaseLease = &release
	}
	if _, err := w.s.ctrl.ReportStatus(ctx, req); err != nil {
		log.Printf("ReportStatus %s: %v", r.Status, err)
		return
	}
	log.Printf("reported %s: %s (release lease: %t)", r.Status, r.Message, release)
}

// run handles lease changes until ctx ends or a hook makes the exporter exit.
func (w *hookWorker) run(ctx context.Context) {
	skipAfter := "" // the lease whose beforeLease hook failed: no afterLease hook
	exitAfter := "" // the lease whose end makes the exporter exit (beforeLease exit)
	failure := ""   // that failure
	for {
		var lw leaseWork
		select {
		case <-ctx.Done():
			return
		case lw = <-w.work:
		}
		env := leasehook.Env(lw.lease, lw.client)
		if !lw.ended {
			if w.hooks.BeforeLease == nil {
				w.report(ctx, leasehook.Before.Done(), false)
				continue
			}
			w.report(ctx, leasehook.Before.Running(), false)
			out := leasehook.RunKind(ctx, leasehook.Before, w.hooks, env)
			reps := out.Reports()
			switch {
			case out.Exits():
				w.report(ctx, reps[0], false)
				w.report(ctx, reps[1], false)
				skipAfter, exitAfter, failure = lw.lease, lw.lease, reps[0].Message
			case out.EndsLease():
				w.report(ctx, reps[0], false)
				skipAfter = lw.lease
				sleep(ctx, leasehook.ReleaseDelay)
				w.report(ctx, reps[0], true) // the request to release the lease
			default:
				w.report(ctx, reps[0], false)
			}
			continue
		}
		if exitAfter == lw.lease {
			w.exit <- failure
			return
		}
		if w.hooks.AfterLease == nil || skipAfter == lw.lease {
			if w.done(ctx, lw.lease) {
				return
			}
			continue
		}
		w.report(ctx, leasehook.After.Running(), false)
		out := leasehook.RunKind(ctx, leasehook.After, w.hooks, env)
		reps := out.Reports()
		switch {
		case out.Exits():
			w.report(ctx, reps[0], false)
			w.report(ctx, reps[1], false)
			sleep(ctx, leasehook.ReleaseDelay)
			w.exit <- reps[0].Message
			return
		case out.EndsLease():
			// Transient: the lease is over already; a second later the exporter takes
			// new leases.
			w.report(ctx, reps[0], false)
			sleep(ctx, leasehook.ReleaseDelay)
			if w.done(ctx, lw.lease) {
				return
			}
		case w.s.cfg.ExitOnLeaseEnd:
			w.ended <- leaseEvent{ended: lw.lease}
			return
		default:
			w.report(ctx, reps[0], false)
		}
	}
}

// done finishes a lease without (or after) its afterLease hook: the exporter exits under
// exitOnLeaseEnd (reported true), else it is available again.
func (w *hookWorker) done(ctx context.Context, lease string) bool {
	if w.s.cfg.ExitOnLeaseEnd {
		w.ended <- leaseEvent{ended: lease}
		return true
	}
	w.report(ctx, leasehook.After.Done(), false)
	return false
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
