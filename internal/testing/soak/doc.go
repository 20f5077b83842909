// Package soak is the chaos soak of the ExporterSet reconciler: a seeded, time-bounded random
// walk over a real API server (envtest) with the Jumpstarter simulator (internal/testing/jumpsim),
// while a Checker watches the namespace and records the first broken invariant.
//
// The walk ([Walk]) takes and releases leases, fails and deletes Pods, flips Exporters
// offline and back, disables and re-enables Exporters by hand (without the reconciler's
// retiring annotation), edits minReplicas, maxReplicas, minAvailableReplicas, the cooldown
// and the template of the sets and the parameters and binding mode of their classes, gives
// classes invalid parameters for a while, deletes and re-creates classes, restarts the
// controller's manager, makes a fraction of the reconciler's API calls fail with 409, 429 or
// 500 ([Faults]), makes the fake provisioner fail, and kills (SIGKILL) the process of a real
// provisioner plugin (examples/container-provisioner) that one set runs on.
//
// It also makes the simulated kubelet, scheduler and Jumpstarter controller fail as real ones
// do (failure_actions.go), each fault for a few seconds and then cleared, so that the walk
// keeps exercising normal behaviour: pulls of a set's exporter or runtime image fail
// (ImagePullBackOff; past the classes' short startupDeadline the instances are replaced);
// a set's runtime or exporter crashes, at once or after a few seconds (the native-sidecar
// runtime of the class with {"sidecar": true} crash-loops, a regular container terminates
// with Error or OOMKilled); the node loses the KVM devices one class requests, gets a
// NoSchedule taint, or is lost (Pods Unknown); a Pod is evicted; an exporter cannot
// register; Pods start and exporters register slowly. Each set has its own images (class
// spec.images), so an image fault hits one set. The run counts the failure events injected,
// by kind, and the Degraded reasons the controller reported, and its summary states both.
// The soak's reconciler backs off failures from 2s doubling to 20s (instead of 5m), so that
// a set repaired at the end of the walk tries again within the settle time.
//
// One set (delta) runs on the external fake (fakeprov.External): its targets live on a
// pretend remote side, as a KubeVirt VM would (external_actions.go). The walk makes that
// remote end unreachable for a few seconds (the set is held and excused meanwhile), deletes
// an instance's remote resource behind the controller's back (it must be created again),
// and leaves resources behind that no Exporter records, as a controller killed between the
// remote create and the local record would (the inventory sweep, every 3s here, must clean
// them up).
//
// It starts rolls on purpose (roll_action.go): start-roll gives a set's template a new
// annotation or its class new (valid) parameters, which change the spec hash and nothing
// else. Every edit that changes a spec hash (start-roll, a template or class parameters
// edit) is recorded in the history and told to the checker: the hashes seen on the set's
// instances before the edit was sent are outdated once it is accepted (the walk's
// revisions only grow, so a spec never returns to an earlier hash), and the roll is under
// way until no instance of an outdated hash is left. The summary counts the rolls started
// and the roll retirements judged.
//
// It gives classes and sets lease hooks (hook_actions.go): an afterLease hook, now and then a
// beforeLease one too, whose script jumpsim runs for real with /bin/sh: it passes, always
// fails, times out, or fails for some leases only (by the digits of the lease's number in
// LEASE_NAME), with onFailure drawn from endLease, exit and warn; sometimes a short
// quarantine-ttl and a max-quarantined of 0 to 2 on the set. A short lease of the set follows
// a moment later, so that an instance built with the hooks runs them. The hooks are taken
// away after 10-30 s by a deferred step, which the quiesce runs too: the walk ends with no
// failing check, and the change of the set or class resets the circuit breaker, so no
// replacement is held back during the settle (an instance still leased then keeps its old
// hooks; its lease may end, fail the check and be quarantined during the settle: its
// replacement is within the settle bound, the breaker needing three quarantines in a row).
// It also gives a set a max-idle-age of 5-25 s for 15-40 s (idle-age), taken away the same
// way, so that idle instances are replaced by surge under the rest of the walk.
//
// Two sets keep a shape through the walk (ondemand_actions.go, issue 38): epsilon is
// on-demand (Immediate binding, minReplicas 0, minAvailableReplicas 0, maxReplicas 3) and
// zeta sits at a ceiling of 1 (maxReplicas 1, minAvailableReplicas 1, ExitAndReplace); the
// walk edits their cooldown and template, never their sizing or binding mode. Besides the
// leases every set gets, lease-back-to-back takes 2 to 4 leases for one of them one after
// the other, each held 1-4 s and released in the step that creates the next; and
// lease-no-pool takes a lease for a board no set serves, which the core refuses.
//
// beta has two physical boards beside it (boards.go, issue 42): Exporters no set owns,
// connected from outside the cluster, named by beta's hardware-selector annotation.
// board-lease leases one for 1-6 s and board-unplug takes one offline for 2-8 s. The final
// check counts the free boards itself: beta's hardwareAvailableReplicas must equal that
// count, its own instances hold only the rest of its buffer, and no board may carry a write
// of the controller's field managers, an owner or a disable.
//
// Three of its sets (alpha, beta, delta) share a CapacityBudget (budget.go) of 3 to 6
// instances, 4 at first, which the walk moves now and then (budget-limit): they want 4
// when idle and up to 10 with their leases, so the budget is exhausted often, and sets with
// waiting Leases take idle instances from the others. The controller runs with
// WithCapacityBudgets.
//
// The [Checker] judges, on every watch event:
//   - the ceiling, counted from the Exporter watch: each Exporter of a set counts from its
//     ADDED event (or the update that makes it the set's) until its DELETED event (or its
//     release), whatever its state, being deleted or retiring included, and one joining the
//     set must not take it over the highest maxReplicas in effect within the last few
//     seconds (ceilingwatch.go; judged 2 s later, as the set's watch may lag);
//   - the budget, counted from the same watch (budgetwatch.go): the governed sets'
//     Exporters (a set's by its set label, else its controller; any state) never number
//     more than limits.instances when one joins, against the highest limit in effect over
//     the last 20 s (a lowered limit still counts while a create reserved under the old
//     one may come; Exporters above it are not a violation, a create beyond it is);
//   - no Exporter holding a lease is disabled (retiring annotation) or deleted by the
//     controller, and no Lease is left assigned to a deleted Exporter;
//   - no Exporter is deleted unless it was retiring or its exporter had exited;
//   - a status saying Available=True for the set's generation agrees with the counters
//     written beside it: availableReplicas >= minAvailableReplicas, readyReplicas >=
//     minReplicas, and no failing instance when none is available (WaitForFirstConsumer:
//     at least minAvailableReplicas instances, as the reconciler counts them);
//   - the availability floor during a roll (rollfloor.go; seen on the event that adds the
//     retiring annotation, judged a second later): when the controller retires an
//     available instance of an outdated spec hash, the available instances of either spec
//     not being retired stay >= min(level, available just before), level =
//     max(minAvailableReplicas, minReplicas - leased), one less at a full maxReplicas (the
//     one-at-a-time step). Retirements while the set has an excess over maxReplicas or a
//     surplus of current-spec instances are not judged (a scale-down, not the roll), nor
//     those of a pass that may not have seen the edit when a scale-down could explain them; the
//     watches' skew is absorbed by counting an instance available (or leased) if it was so
//     from a second before the controller's pass to a second after the observation;
//   - the quarantine (quarantinewatch.go): no Lease is assigned to an Exporter after the set
//     quarantined it (marked and disabled, and not enabled again by a person, which puts it
//     back in service), the order taken from resourceVersions (etcd's one counter), judged
//     2 s after the assignment is seen; an assignment written within 2 s of the quarantine
//     (as the checker saw both) is the lease scheduler's stale cache and is counted as raced,
//     not reported; and the set disables in the write that marks. The failed hooks the
//     exporters report are followed: whether the instance is out of service 2 s later is
//     counted (not judged: a controller restarted by the walk forgets a report);
//   - no refused user while a set has room (refusewatch.go, issue 38): upstream's core ends
//     a Lease Unsatisfiable at once, from its cache, when no enabled Exporter matches
//     (NoAccess) or all matches are disabled (AllDisabled), and jumpsim does the same; a
//     Lease whose selector matches a set's template labels must not end so while the set
//     is not being deleted, its class exists and its provisioner is served, no
//     CapacityBudget holds it at 0 (a limit of 0, or full and allowing it none) and the
//     Exporters a person disabled do not fill its maxReplicas. Judged 2 s after the Lease's
//     watch shows it, the other watches having caught up; excused for RefuseGrace (10 s)
//     only after the soak itself changed the set (created it, changed its class name,
//     selector or template labels, deleted or re-created its class, gave a budget over it no
//     room, disabled one of its Exporters by hand), and while the soak disrupts it (the
//     controller down, its provisioner or plugin failing); a Lease for no set is only counted;
//
// and a few times a second:
//   - demand before spares (budgetstarve.go): no Lease waits for a governed set for longer
//     than 20 s while, all the time, the budget is full (by the watch), the set is below
//     its maxReplicas with fewer usable unleased instances than waiting Leases, and another
//     governed set with no unassigned Lease holds an idle (enabled, unleased, ready, not
//     failing, leaving, exited or quarantined) instance above its minReplicas, neither set
//     excused;
//   - the instances not being recycled never exceed maxReplicas for long (beyond leased or
//     hand-disabled ones, which cannot be retired), and a set never stays above maxReplicas
//     for long except while it cannot act (class gone, controller down, node fault...);
//   - a status does not keep saying Available=True for longer than a grace while the
//     objects, recomputed with the checker's own diagnosis of Pod failures, show the buffer
//     or the floor broken (the grace absorbs the watches' lag and the controller's pass);
//   - while the walk keeps a set failing (an image or crash fault of its own, the walk's
//     record), it creates no more instances per minute than its failure backoff allows:
//     the attempts the backoff permits between the resets the reconciler makes (spec or
//     class changes, restarts, an instance becoming ready, node faults), times the largest
//     batch (maxReplicas), plus one batch and one instance per disruption of slack.
//
// After the walk every fault is turned off (the simulator's failures included) and, within a
// bounded time, the status of every set must equal a recomputation from the objects, the
// warm buffer and the floor must be met where the ceiling allows (quarantined instances
// occupy the ceiling and count towards neither; they may be deleted without retiring, and an
// exited one is kept, not recycled), nothing may still be recycling, and no Pod, Secret or Exporter
// may be orphaned, and no remote resource of the external fake may lack its Exporter (same
// name and UID) nor a recorded Exporter its remote resource ([Checker.Final]). The budget's
// status must be current, its reservations must each name an existing Exporter or be
// younger than the 20 s grace, and its used.instances (and each set's instances) must
// equal the governed Exporters plus those reservations; a set of a full budget is excused
// its warm buffer, floor and begun bookings (the starvation invariant, which runs during
// the settle too, judges whether the budget hands its capacity out as it should). The roll
// floor takes a set's allowed in the budget's status as its ceiling, as maxReplicas. The walk also
// books leases ahead (bookings.go); the final state waits for every booking to begin, and
// each must then be assigned where its set's ceiling allows.
//
// Run it with `make soak` (SOAK_DURATION, default 2m, split between seed 1 and a random seed;
// `make soak DURATION=30m` for a long run, `SOAK_SEED=n` to replay one seed). `go test ./...`
// runs the short default. A failure prints the seed, the violations and the event history.
// `make soak-sweep` (SOAK_RANDOM_SEEDS, SOAK_WALKS; sweep_test.go) walks the fixed seeds
// plus random ones several times each, SOAK_DURATION per walk, and prints a table of walks.
package soak
