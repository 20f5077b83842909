// Package leasehook runs an exporter's lease hooks (the config file's hooks.beforeLease and
// hooks.afterLease, see internal/exportercfg) as upstream Jumpstarter's exporter does, and
// words what the exporter reports around them with upstream's statuses and messages.
//
// The two exporters of this repository use it: jumpsim's simulated one and the e2e tier's
// stand-in `jmp run`. Both decide for themselves how a report reaches the controller and what
// ending a lease or exiting means; the words and the order come from here, so the two fail
// alike, and as upstream's exporter does (python/packages/jumpstarter/jumpstarter/exporter/
// hooks.py upstream):
//
//	beforeLease: BeforeLeaseHook "Running beforeLease hook", then
//	  success   LeaseReady "Ready for commands"
//	  warn      LeaseReady "[HOOK_WARNING] beforeLease hook warning: <error>"
//	  endLease  BeforeLeaseHookFailed "beforeLease hook failed (on_failure=endLease): <error>";
//	            the lease is released after ReleaseDelay, no afterLease hook runs
//	  exit      BeforeLeaseHookFailed "beforeLease hook failed (on_failure=exit, shutting down): <error>",
//	            Offline "Exporter shutting down due to beforeLease hook failure"; the exporter
//	            exits with code 1 (unregistering) once the lease is over
//	afterLease: AfterLeaseHook "Running afterLease hooks", then
//	  success   Available "Available for new lease"
//	  warn      Available "[HOOK_WARNING] afterLease hook warning: <error>"
//	  endLease  AfterLeaseHookFailed "afterLease hook failed (on_failure=endLease): <error>",
//	            transient: after ReleaseDelay the lease is released and the exporter is
//	            Available "Available for new lease" again
//	  exit      AfterLeaseHookFailed "afterLease hook failed (on_failure=exit, shutting down): <error>",
//	            Offline "Exporter shutting down due to afterLease hook failure"; exit code 1
//
// <error> is "Hook failed with exit code N", "Hook timed out after N seconds" or "Error
// executing hook: <why>" (the script could not be started).
package leasehook
