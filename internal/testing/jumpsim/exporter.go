package jumpsim

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// setupExporterController wires the Exporter side of the simulated Jumpstarter controller:
// credentials and presence, one status write per pass so they never conflict with each other.
func (s *Simulator) setupExporterController() error {
	mapper := s.mgr.GetRESTMapper()
	err := builder.ControllerManagedBy(s.mgr).
		Named("jumpsim-exporter").
		For(&jsv1.Exporter{}).
		// The Pods it controls decide presence.
		Watches(&corev1.Pod{}, handler.EnqueueRequestForOwner(s.scheme, mapper, &jsv1.Exporter{}, handler.OnlyControllerOwner())).
		// Its token Secret, and its config Secret (exitOnLeaseEnd, drivers).
		Watches(&corev1.Secret{}, handler.EnqueueRequestForOwner(s.scheme, mapper, &jsv1.Exporter{})).
		// A lease ending may make its process exit.
		Watches(&jsv1.Lease{}, handler.EnqueueRequestsFromMapFunc(leaseToExporter)).
		WatchesRawSource(source.Channel(s.exporterPokes, &handler.EnqueueRequestForObject{})).
		Complete(reconcile.Func(s.reconcileExporter))
	if err != nil {
		return fmt.Errorf("jumpsim: setting up exporter controller: %w", err)
	}
	return nil
}

func leaseToExporter(_ context.Context, obj client.Object) []reconcile.Request {
	l := obj.(*jsv1.Lease)
	if l.Status.ExporterRef == nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: l.Namespace, Name: l.Status.ExporterRef.Name}}}
}

// reconcileExporter issues the credential when due and reports presence.
func (s *Simulator) reconcileExporter(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return s.syncExporter(ctx, req, s.client)
}

// syncExporter is reconcileExporter reading the Exporter through from. The controller reads
// its cache: a copy behind the newest write is corrected by the conflict it causes, or, when
// it already reads as wanted and nothing is written, by the watch event still on its way. A
// hook (SetOnline, SetOffline...) promises its effect is written before it returns, so it
// reads from the apiserver: through the cache, SetOnline right after SetOffline could see
// the Exporter still Online from before SetOffline's write, write nothing, and return with
// the Exporter Offline.
func (s *Simulator) syncExporter(ctx context.Context, req reconcile.Request, from client.Reader) (reconcile.Result, error) {
	var ex jsv1.Exporter
	if err := from.Get(ctx, req.NamespacedName, &ex); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if ex.DeletionTimestamp != nil {
		s.hooks.forgetExporter(ex.UID)
		return reconcile.Result{}, nil
	}
	credReady, credWait, err := s.ensureCredential(ctx, &ex)
	if err != nil {
		return reconcile.Result{}, s.reconcileError("credentials", "Exporter", req.NamespacedName, err)
	}
	view, err := s.observePresence(ctx, &ex)
	if err != nil {
		return reconcile.Result{}, err
	}
	if view.pod != nil {
		s.hooks.forgetOtherProcesses(ex.UID, view.pod.UID)
	}
	// Transitions are judged inside mutate: on a retry ex is the fresh object, and the cached
	// one may be behind.
	var issued, wasOnline bool
	var requeue time.Duration
	wrote, err := s.writeStatus(ctx, &ex, func() bool {
		hadCredential := ex.Status.Credential != nil
		wasOnline = meta.IsStatusConditionTrue(ex.Status.Conditions, jsv1.ExporterConditionOnline)
		c1 := s.applyCredential(&ex, credReady)
		issued = !hadCredential && ex.Status.Credential != nil
		c2, rq := s.applyPresence(&ex, view, time.Now())
		requeue = rq
		return c1 || c2
	})
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, s.reconcileError("presence", "Exporter", req.NamespacedName, err)
	}
	if !wrote {
		return reconcile.Result{RequeueAfter: minPositive(credWait, requeue)}, nil
	}
	if issued {
		s.record("credentials", ActionCredentialIssued, "Exporter", ex.Namespace, ex.Name, "credential secret %s, endpoint %s", ex.Status.Credential.Name, ex.Status.Endpoint)
	}
	switch online := meta.IsStatusConditionTrue(ex.Status.Conditions, jsv1.ExporterConditionOnline); {
	case online && !wasOnline:
		pod := ""
		if view.pod != nil {
			pod = view.pod.Name
		}
		s.record("presence", ActionExporterOnline, "Exporter", ex.Namespace, ex.Name, "registered and online via pod %s", pod)
	case !online && wasOnline:
		s.record("presence", ActionExporterOffline, "Exporter", ex.Namespace, ex.Name, "%s", ex.Status.StatusMessage)
	}
	return reconcile.Result{RequeueAfter: minPositive(credWait, requeue)}, nil
}

// reconcileError records unexpected errors (conflicts are routine under load and retried) and
// returns err so the work queue retries with back-off.
func (s *Simulator) reconcileError(component, kind string, key types.NamespacedName, err error) error {
	if !apierrors.IsConflict(err) && !errors.Is(err, context.Canceled) {
		s.record(component, ActionError, kind, key.Namespace, key.Name, "%v", err)
	}
	return err
}
