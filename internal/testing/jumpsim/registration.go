package jumpsim

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/internal/exportercfg"
)

// msgStale is upstream's Online=False message for an exporter not seen for a while.
func msgStale(timeout time.Duration) string {
	if timeout == time.Minute {
		return "Last seen more than 1 minute ago"
	}
	return fmt.Sprintf("Last seen more than %s ago", timeout)
}

// exporterContainerRunning reports whether the container running the exporter process
// (the one mounting its config) is running: a crashed or restarting one is not connected.
// A Pod without such a container counts as running, as before config checks existed.
func exporterContainerRunning(pod *corev1.Pod, src configSource) bool {
	if src.container == "" {
		return true
	}
	cs, ok := statusOf(pod.Status.ContainerStatuses, src.container)
	return !ok || cs.State.Running != nil
}

// checkRegistration decides whether the exporter process in v.pod can register: not while
// SetNotRegistering holds, nor when its mounted config is wrong for this Exporter (a real
// exporter could not connect or authenticate), nor before the registration delay passed.
//
// A native sidecar that crash-loops (the target runtime) does not stop registration: the
// exporter runs in its own container and registers; the target behind it is broken, which
// the Pod reports (Ready=False), not the Exporter.
func (s *Simulator) checkRegistration(ctx context.Context, ex *jsv1.Exporter, v *presenceView) {
	key := client.ObjectKeyFromObject(ex)
	blocked := ""
	if m, ok := s.faults.notRegisteringMessage(key); ok {
		blocked = m
		if blocked == "" {
			blocked = "exporter cannot register (jumpsim SetNotRegistering)"
		}
	} else if s.opts.configChecks && v.cfg != nil {
		blocked = s.configProblem(ctx, ex, v.cfg)
	}
	v.blocked = blocked
	if d := s.registrationDelay(); d > 0 && blocked == "" {
		if at := s.presence.running.first(v.pod.UID).Add(d); time.Now().Before(at) {
			v.registerAt = at
		}
	}
	s.noteRegistration(ex, v.pod.Name, blocked)
}

// configProblem returns what an exporter with config cfg would log when it fails to
// register as ex, or "" when the config is right.
func (s *Simulator) configProblem(ctx context.Context, ex *jsv1.Exporter, cfg *exportercfg.Config) string {
	if ex.Status.Endpoint != "" && cfg.Endpoint != ex.Status.Endpoint {
		return fmt.Sprintf("failed to connect to the controller at %q: the Exporter's endpoint is %q", cfg.Endpoint, ex.Status.Endpoint)
	}
	if err := cfg.TLS.Check(); err != nil {
		return fmt.Sprintf("failed to connect to the controller at %q: %v", cfg.Endpoint, err)
	}
	if ex.Status.Credential != nil {
		var sec corev1.Secret
		err := s.client.Get(ctx, types.NamespacedName{Namespace: ex.Namespace, Name: ex.Status.Credential.Name}, &sec)
		if token := string(sec.Data[TokenKey]); err == nil && token != "" && cfg.Token != token {
			return "failed to register with the controller: rpc error: code = Unauthenticated desc = invalid token (the config's token is not the Exporter's current credential)"
		}
	}
	return ""
}

// noteRegistration remembers why the exporter of ex cannot register (blocked "" when it
// can, or when no Pod of it runs) and records an event when the cause appears or changes.
func (s *Simulator) noteRegistration(ex *jsv1.Exporter, pod, blocked string) {
	key := client.ObjectKeyFromObject(ex)
	s.presence.mu.Lock()
	prev, had := s.presence.registerFail[key]
	if blocked == "" {
		delete(s.presence.registerFail, key)
	} else {
		s.presence.registerFail[key] = blocked
	}
	s.presence.mu.Unlock()
	if blocked != "" && (!had || prev != blocked) {
		s.record("presence", ActionNotRegistering, "Exporter", ex.Namespace, ex.Name, "exporter in pod %s cannot register: %s", pod, blocked)
	}
}

// NotRegisteringReason returns why the exporter of the Exporter namespace/exporter does not
// register although its Pod runs, as the exporter's log would say it: the message given to
// SetNotRegistering, or what is wrong with its mounted config (endpoint, token, CA). ok is
// false while nothing stops it (or no Pod of it runs).
func (s *Simulator) NotRegisteringReason(namespace, exporter string) (message string, ok bool) {
	key := types.NamespacedName{Namespace: namespace, Name: exporter}
	s.presence.mu.Lock()
	defer s.presence.mu.Unlock()
	m, ok := s.presence.registerFail[key]
	return m, ok
}
