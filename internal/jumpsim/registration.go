package jumpsim

import (
	"k8s.io/apimachinery/pkg/types"
)

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
