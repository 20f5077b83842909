package jumpsim

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Physical boards: an Exporter whose exporter process runs on a lab host, outside the
// cluster. Upstream's core treats it as any Exporter: it issues its credential, and the
// process that connects with it makes it Registered and Online, with no Pod anywhere.

// ConnectFromOutside makes the exporter process of the Exporter namespace/name run outside
// the cluster, as a physical board's does: once its credential is issued it is Registered
// and Online without a Pod, takes leases, and stays connected after them (a board does not
// exit at lease end), until DisconnectFromOutside. SetOffline still takes it offline. The
// status is written before it returns.
func (s *Simulator) ConnectFromOutside(ctx context.Context, namespace, name string) error {
	return s.setOutside(ctx, types.NamespacedName{Namespace: namespace, Name: name}, true)
}

// DisconnectFromOutside stops the outside process ConnectFromOutside started: the Exporter
// goes offline, as a board unplugged or its host down. The status is written before it
// returns.
func (s *Simulator) DisconnectFromOutside(ctx context.Context, namespace, name string) error {
	return s.setOutside(ctx, types.NamespacedName{Namespace: namespace, Name: name}, false)
}

func (s *Simulator) setOutside(ctx context.Context, key types.NamespacedName, on bool) error {
	s.presence.mu.Lock()
	if on {
		s.presence.outside[key] = true
	} else {
		delete(s.presence.outside, key)
	}
	s.presence.mu.Unlock()
	_, err := s.syncExporter(ctx, reconcile.Request{NamespacedName: key}, s.direct)
	return err
}

func (p *presenceState) runsOutside(key types.NamespacedName) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.outside[key]
}

// registeredMessage is the Registered condition's message for a connected process.
func registeredMessage(v presenceView) string {
	if v.pod == nil {
		return "Exporter process outside the cluster registered"
	}
	return fmt.Sprintf("Exporter process in pod %s registered", v.pod.Name)
}
