package exporterset

// ProvisionerGate says whether this process may act on the sets of a provisioner in a
// namespace now: the controller process passes one that is true while it holds the leader
// election lock of that provisioner in that namespace (the Lease upstream's exporter-set
// controller holds in the namespace it serves), so that two controllers (ours, or ours and
// upstream's, installed side by side or during an image swap) never work on one pool. It is
// asked with "" for a set whose class is missing, and with the class's provisioner for a
// set reported as ProvisionerUnknown (WithClaimUnknownProvisioners); it must be safe for
// concurrent use.
type ProvisionerGate func(namespace, provisioner string) bool

// WithProvisionerGate makes the reconciler leave a set alone (no writes, not even status)
// while gate is false for its provisioner, looking again every two seconds. The default acts
// on every set of a served provisioner.
func WithProvisionerGate(gate ProvisionerGate) Option {
	return func(o *options) { o.set.Gate = gate }
}
