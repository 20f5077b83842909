// Package scalebench is the scale benchmark of the ExporterSet controller (`make
// bench-scale`): on one real kube-apiserver + etcd it runs the reference binary
// (cmd/exporterset-controller) and, side by side, the Kubernetes ReplicaSet controller
// (kube-controller-manager --controllers=replicaset) creating the same number of Pods, with
// one simulated Jumpstarter core and kubelet (internal/testing/jumpsim) serving both.
//
// Both controllers run as subprocesses, started afresh for each workload, so that their RSS
// is their own and their requests can be told apart. Requests are counted on the API
// server's side, from its audit log: each controller talks as its own user, and an audit
// policy records only those two users, so the count is exact, per verb and resource, and
// identical for both. The controller's own client-go counter (rest_client_requests_total)
// is scraped as a cross-check.
//
// With --upstream-bin, upstream's exporter-set controller runs as a third contender on the
// same simulator (single-set scale-ups and the lease storm), and with --baseline-bin a second
// build of ours alternates with the first, so that a before/after comparison is one run.
//
// Workloads: one set (or ReplicaSet) scaled from 0 to N, many sets of a few instances, a
// lease storm (ours only) and a memory check with 20 000 unrelated Pods, Secrets and
// Exporters in the cluster, which compares our RSS with and without them and with the
// ReplicaSet controller's with them (memory.go, junk.go). Each timed workload is repeated and the median reported; the output is a table
// on stdout and a JSON file.
//
// The package is not part of the default test run: it has no tests, only the
// cmd/bench-scale main.
package scalebench
