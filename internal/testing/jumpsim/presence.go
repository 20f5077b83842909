package jumpsim

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/internal/exportercfg"
)

// Condition reasons and messages, as upstream's controller words them.
const (
	reasonSeen       = "Seen"
	reasonOffline    = "Offline"
	reasonRegister   = "Register"
	reasonUnregister = "Unregister"

	msgNeverSeen = "Never seen"
	msgSeen      = "Last seen less than 1 minute ago"
	msgExited    = "Exporter process exited after its lease (exitOnLeaseEnd)"
)

// DeviceNameLabel is the device label carrying the driver name in status.devices.
const DeviceNameLabel = "jumpstarter.dev/name"

// SetOffline makes the Exporter namespace/name report Online=False (exporterStatus Offline)
// even while its Pod runs, as a lost connection does; Registered stays as it was. It lasts
// until SetOnline, also across a re-creation of the Exporter under the same name. The
// status is written before SetOffline returns.
func (s *Simulator) SetOffline(ctx context.Context, namespace, name string) error {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	s.presence.mu.Lock()
	s.presence.offline[key] = true
	s.presence.mu.Unlock()
	_, err := s.syncExporter(ctx, reconcile.Request{NamespacedName: key}, s.direct)
	return err
}

// SetOnline removes a SetOffline override: the Exporter is online again if its Pod runs.
// The status is written before SetOnline returns.
func (s *Simulator) SetOnline(ctx context.Context, namespace, name string) error {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	s.presence.mu.Lock()
	delete(s.presence.offline, key)
	s.presence.mu.Unlock()
	_, err := s.syncExporter(ctx, reconcile.Request{NamespacedName: key}, s.direct)
	return err
}

// SetExporterStatus makes the online Exporter namespace/name report value (for example
// AfterLeaseHookFailed, which the lease scheduler skips as NotReady) with message as its
// statusMessage. An empty value removes the override. An offline Exporter reports Offline
// regardless.
func (s *Simulator) SetExporterStatus(ctx context.Context, namespace, name string, value jsv1.ExporterStatusValue, message string) error {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	s.presence.mu.Lock()
	if value == "" {
		delete(s.presence.override, key)
	} else {
		s.presence.override[key] = statusOverride{value: value, message: message}
	}
	s.presence.mu.Unlock()
	_, err := s.syncExporter(ctx, reconcile.Request{NamespacedName: key}, s.direct)
	return err
}

// presenceView is what the simulated exporter process of one Exporter reports.
type presenceView struct {
	// pod is the Pod whose exporter process is connected, nil when none is.
	pod *corev1.Pod
	// cfg is that Pod's exporter config, nil when unreadable.
	cfg *exportercfg.Config
	// exited is set when no process is connected because one exited after its lease.
	exited bool
	// blocked says why the process in pod cannot register ("" when it can).
	blocked string
	// registerAt is when a delayed registration happens (zero: not delayed).
	registerAt time.Time
	// lostSince is when pod's node was lost (zero: reachable): its process stopped
	// reporting then.
	lostSince time.Time
	// outside is set when the process runs outside the cluster, a board's (boards.go).
	outside bool
}

// observePresence finds the Pod serving an Exporter: controlled by it, Running (or Unknown
// on a lost node), not terminating, its exporter container running and its process not
// exited after a lease. Several such Pods (a controller bug) resolve to the first by name.
// It also tells whether that process can register (registration.go).
func (s *Simulator) observePresence(ctx context.Context, ex *jsv1.Exporter) (presenceView, error) {
	if s.presence.runsOutside(client.ObjectKeyFromObject(ex)) {
		return presenceView{outside: true}, nil
	}
	pods, err := s.controlledPods(ctx, ex.Namespace, ex.UID)
	if err != nil {
		return presenceView{}, err
	}
	var v presenceView
	for i := range pods {
		pod := &pods[i]
		unknown := pod.Status.Phase == corev1.PodUnknown
		if (pod.Status.Phase != corev1.PodRunning && !unknown) || pod.DeletionTimestamp != nil {
			continue
		}
		if l, exited := s.exitedAfterLease(ctx, pod); exited {
			if s.opts.realNode {
				src, _ := findConfigSource(pod)
				s.tellLeaseEnded(ctx, pod, src.container, l)
			}
			v.exited = true
			continue
		}
		cfg, src, _ := s.readExporterConfig(ctx, pod)
		if !exporterContainerRunning(pod, src) {
			continue // crashed, or waiting to restart
		}
		if s.opts.realNode && src.container != "" && !containerReady(pod, src.container) {
			continue // a real kubelet's word: the container is not Ready
		}
		v = presenceView{pod: pod, cfg: cfg}
		if lost, at := s.node.isLost(); unknown && lost && pod.Spec.NodeName == s.node.name {
			v.lostSince = at
		}
		s.checkRegistration(ctx, ex, &v)
		return v, nil
	}
	s.noteRegistration(ex, "", "")
	return v, nil
}

// controlledPods lists, sorted by name, the Pods whose controller has this UID.
func (s *Simulator) controlledPods(ctx context.Context, namespace string, uid types.UID) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := s.client.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{indexOwnerUID: string(uid)}); err != nil {
		return nil, err
	}
	out := list.Items[:0]
	for _, p := range list.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == uid {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// applyPresence writes what the exporter process reports into ex's status and reports
// whether anything changed and when to look again.
func (s *Simulator) applyPresence(ex *jsv1.Exporter, v presenceView, now time.Time) (bool, time.Duration) {
	key := client.ObjectKeyFromObject(ex)
	// Without a token the process cannot register, however long its Pod runs; nor with a
	// wrong config, nor before its registration delay passed.
	connected := (v.pod != nil || v.outside) && ex.Status.Credential != nil && v.blocked == "" && v.registerAt.IsZero()
	forced := s.presence.forcedOffline(key)
	// A process on a lost node stops reporting; the controller reports it Online until it
	// was last seen longer ago than the online timeout.
	staleAt := time.Time{}
	if !v.lostSince.IsZero() {
		staleAt = v.lostSince.Add(s.opts.onlineTimeout)
	}
	stale := connected && !staleAt.IsZero() && !now.Before(staleAt)
	online := connected && !forced && !stale
	wasOnline := meta.IsStatusConditionTrue(ex.Status.Conditions, jsv1.ExporterConditionOnline)
	gen := ex.Generation
	changed := false
	var requeue time.Duration
	if !v.registerAt.IsZero() {
		requeue = max(v.registerAt.Sub(now), time.Millisecond)
	}
	if connected && !stale && !staleAt.IsZero() {
		requeue = minPositive(requeue, max(staleAt.Sub(now), time.Millisecond))
	}

	if connected {
		changed = setCond(&ex.Status.Conditions, jsv1.ExporterConditionRegistered, true, gen, reasonRegister, registeredMessage(v)) || changed
		devices := devicesFor(ex, v.cfg)
		if !equality.Semantic.DeepEqual(ex.Status.Devices, devices) {
			ex.Status.Devices = devices
			changed = true
		}
	} else {
		// Upstream's Registered=False carries no message of its own until an exporter
		// unregisters.
		message := ""
		if !ex.Status.LastSeen.IsZero() {
			message = "No exporter process is registered"
		}
		if v.exited {
			message = msgExited
		}
		changed = setCond(&ex.Status.Conditions, jsv1.ExporterConditionRegistered, false, gen, reasonUnregister, message) || changed
		if ex.Status.Devices != nil {
			ex.Status.Devices = nil
			changed = true
		}
	}

	if online {
		changed = setCond(&ex.Status.Conditions, jsv1.ExporterConditionOnline, true, gen, reasonSeen, msgSeen) || changed
		hb := s.opts.heartbeat
		heartbeat := hb > 0 && v.lostSince.IsZero() && now.Sub(ex.Status.LastSeen.Time) >= hb
		if !wasOnline || ex.Status.LastSeen.IsZero() || heartbeat {
			ex.Status.LastSeen = metav1.NewTime(now)
			changed = true
		}
		if hb > 0 {
			requeue = minPositive(requeue, hb)
		}
		value, message, until := s.onlineStatusValue(ex)
		if !until.IsZero() {
			requeue = minPositive(requeue, until.Sub(now))
		}
		changed = setStatusValue(ex, value, message) || changed
	} else {
		// Offline is what an exporter that was seen reports or is given; upstream leaves
		// exporterStatus empty until an exporter first reports.
		reason, message, value := "", "", jsv1.ExporterStatusOffline
		switch {
		case connected && forced:
			reason, message = reasonOffline, "Connection lost (jumpsim SetOffline)"
		case stale:
			reason, message = reasonSeen, msgStale(s.opts.onlineTimeout)
			// It was reporting until its node was lost. The API keeps whole seconds.
			if lost := v.lostSince.Truncate(time.Second); ex.Status.LastSeen.Time.Before(lost) {
				ex.Status.LastSeen = metav1.NewTime(lost)
				changed = true
			}
		case hookExited(s, ex):
			// Its last report before it exited after a failed hook.
			rep, _ := s.hooks.exitReport(ex.UID)
			reason, message = reasonOffline, rep.Message
		case v.exited:
			reason, message = reasonOffline, msgExited
		case ex.Status.LastSeen.IsZero():
			reason, message, value = reasonSeen, msgNeverSeen, ""
		default:
			reason, message = reasonOffline, "Exporter process is not running"
		}
		changed = setCond(&ex.Status.Conditions, jsv1.ExporterConditionOnline, false, gen, reason, message) || changed
		changed = setStatusValue(ex, value, message) || changed
	}
	return changed, requeue
}

// onlineStatusValue is the exporterStatus of an online Exporter: an override, else what
// its process reports about its lease hooks (hooks.go), else LeaseReady while leased, AfterLeaseHook during the after-lease pause, else Available. It
// also returns when the after-lease pause ends.
func (s *Simulator) onlineStatusValue(ex *jsv1.Exporter) (jsv1.ExporterStatusValue, string, time.Time) {
	if o, ok := s.presence.statusOverride(client.ObjectKeyFromObject(ex)); ok {
		return o.value, o.message, time.Time{}
	}
	if rep, ok := s.hooks.reportFor(ex); ok {
		return jsv1.ExporterStatusValue(rep.Status), rep.Message, time.Time{}
	}
	if ex.Status.LeaseRef != nil {
		return jsv1.ExporterStatusLeaseReady, "", time.Time{}
	}
	if until := s.presence.afterLeaseUntil(ex.UID); !until.IsZero() {
		return jsv1.ExporterStatusAfterLeaseHook, "Running after-lease hook", until
	}
	return jsv1.ExporterStatusAvailable, "", time.Time{}
}

// markExited sets the status an exporter process reports as it shuts down, so the lease
// scheduler never sees it free and online between its lease's end and its Pod completing.
func markExited(ex *jsv1.Exporter) {
	setCond(&ex.Status.Conditions, jsv1.ExporterConditionOnline, false, ex.Generation, reasonOffline, msgExited)
	setCond(&ex.Status.Conditions, jsv1.ExporterConditionRegistered, false, ex.Generation, reasonUnregister, msgExited)
	ex.Status.Devices = nil
	setStatusValue(ex, jsv1.ExporterStatusOffline, msgExited)
}

func setStatusValue(ex *jsv1.Exporter, value jsv1.ExporterStatusValue, message string) bool {
	if ex.Status.ExporterStatusValue == value && ex.Status.StatusMessage == message {
		return false
	}
	ex.Status.ExporterStatusValue, ex.Status.StatusMessage = value, message
	return true
}

// setCond sets a condition; lastTransitionTime moves only when the status changes.
func setCond(conds *[]metav1.Condition, typ string, status bool, gen int64, reason, message string) bool {
	st := metav1.ConditionFalse
	if status {
		st = metav1.ConditionTrue
	}
	return meta.SetStatusCondition(conds, metav1.Condition{
		Type: typ, Status: st, ObservedGeneration: gen, Reason: reason, Message: message,
	})
}

// devicesFor reports one device per configured driver (a single "root" device when the
// config is unreadable), with UUIDs stable per Exporter.
func devicesFor(ex *jsv1.Exporter, cfg *exportercfg.Config) []jsv1.Device {
	names := []string{"root"}
	if cfg != nil && len(cfg.Export) > 0 {
		names = cfg.DriverNames()
	}
	out := make([]jsv1.Device, 0, len(names))
	for _, n := range names {
		out = append(out, jsv1.Device{Uuid: deviceUUID(ex.UID, n), Labels: map[string]string{DeviceNameLabel: n}})
	}
	return out
}

func deviceUUID(uid types.UID, driver string) string {
	h := sha256.Sum256([]byte(string(uid) + "/" + driver))
	h[6] = (h[6] & 0x0f) | 0x50 // a name-based (v5-style) UUID layout
	h[8] = (h[8] & 0x3f) | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

func minPositive(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	case a < b:
		return a
	default:
		return b
	}
}

// connected returns exs with those whose Online condition is stale marked offline: an
// Exporter that still reads Online while no process of it runs any more (its Pod completed
// or failed, or its process exited after a lease). The real controller drops such an exporter
// the moment its stream closes, before anything else can be assigned to it; here presence
// writes Offline a moment later, and a lease scheduled in between must not get it.
func (s *Simulator) connected(ctx context.Context, exs []jsv1.Exporter) []jsv1.Exporter {
	out := make([]jsv1.Exporter, 0, len(exs))
	for _, ex := range exs {
		if meta.IsStatusConditionTrue(ex.Status.Conditions, jsv1.ExporterConditionOnline) && !s.processRuns(ctx, &ex) {
			ex = *ex.DeepCopy()
			meta.SetStatusCondition(&ex.Status.Conditions, metav1.Condition{Type: jsv1.ExporterConditionOnline,
				Status: metav1.ConditionFalse, Reason: reasonOffline, Message: msgExited})
		}
		out = append(out, ex)
	}
	return out
}

// processRuns reports whether an exporter process of ex may be connected: a Pod it controls
// is Running (or Unknown, on a lost node), not terminating, and its process has not exited
// after a lease. An Exporter without Pods (tests that drive its status by hand) counts as
// running.
func (s *Simulator) processRuns(ctx context.Context, ex *jsv1.Exporter) bool {
	pods, err := s.controlledPods(ctx, ex.Namespace, ex.UID)
	if err != nil || len(pods) == 0 {
		return true
	}
	for i := range pods {
		pod := &pods[i]
		if (pod.Status.Phase != corev1.PodRunning && pod.Status.Phase != corev1.PodUnknown) || pod.DeletionTimestamp != nil {
			continue
		}
		if _, exited := s.exitedAfterLease(ctx, pod); exited {
			continue
		}
		return true
	}
	return false
}
