package scalebench

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// Upstream's exporter-set controller is run as it is (Config.UpstreamBin): its own flags,
// NAMESPACE in its environment, the built-in QEMU provisioner. It watches one namespace, so
// it runs afresh for each workload as ours does, as its own user (counted in the audit log
// like the others). Nothing of it is linked or copied: it is a process beside ours.

// upstreamProvisioner is the provisioner the sample class names, which upstream serves built in.
const upstreamProvisioner = "qemu.jumpstarter.dev"

// startUpstream runs upstream's binary for namespace ns as userUpstream and waits until its
// /readyz answers.
func startUpstream(ctx context.Context, c *Cluster, bin, logDir, ns string) (*process, error) {
	pport, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--provisioner", upstreamProvisioner,
		"--metrics-bind-address", "0",
		"--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(pport),
	}
	p, err := startProcessEnv("upstream-exporter-set-controller", bin, args,
		[]string{"NAMESPACE=" + ns, "KUBECONFIG=" + c.Kubeconfig(userUpstream)},
		filepath.Join(logDir, "upstream-"+ns+".log"))
	if err != nil {
		return nil, err
	}
	if err := waitReady(ctx, p, pport); err != nil {
		return nil, err
	}
	return p, nil
}

// runUpstream scales one set of w up in ns with a fresh upstream controller. Ready is when
// the benchmark's own watch sees w.PerSet Exporters available (upstream's status is not
// relied on), which is at most as late as ours' status shows it.
func (b *Bench) runUpstream(ctx context.Context, w Workload, ns string, repeat int) (*Result, error) {
	if w.Sets != 1 {
		return nil, fmt.Errorf("upstream runs single-set workloads only")
	}
	if err := b.fx.prepareOurs(ctx, b.cluster.Client, ns); err != nil {
		return nil, err
	}
	ctl, err := startUpstream(ctx, b.cluster, b.cfg.UpstreamBin, b.cfg.WorkDir, ns)
	if err != nil {
		return nil, err
	}
	defer ctl.stop()
	tctx, untrack := context.WithCancel(ctx)
	defer untrack()
	tr, err := b.trackInstances(tctx, ns, Upstream)
	if err != nil {
		return nil, err
	}
	m, err := b.begin(ctl.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	if err := b.cluster.Client.Create(ctx, b.fx.exporterSet(ns, setName(0), w.PerSet)); err != nil {
		return nil, err
	}
	ready, err := b.waitAvailable(ctx, ns, int(w.PerSet), ctl.exited)
	if err != nil {
		return nil, err
	}
	r, err := b.finishProcess(ctl, m, ready, userUpstream, &Result{
		Workload: w.Name, Controller: Upstream, Repeat: repeat, Namespace: ns,
		Instances: w.Instances(), ObjectsPerInstance: 3,
	})
	if err == nil {
		r.Latency = tr.latency(m.start) // after the settle time: the tracker's watch is its own
	}
	return r, err
}

// finishProcess waits out the settle time, fills r's time, CPU, memory and the requests of
// user (the audit log), and stops the controller process p.
func (b *Bench) finishProcess(p *process, m measure, ready time.Time, user string, r *Result) (*Result, error) {
	r.ReadySeconds = ready.Sub(m.start).Seconds()
	end := ready.Add(settle)
	time.Sleep(time.Until(end))
	r.CPU = b.cpu.since(m.cpu, m.pid)
	var err error
	if r.RSSBytes, r.PeakRSSBytes, err = p.memory(); err != nil {
		return nil, err
	}
	p.stop()
	if r.Requests, err = b.requests(m, user, end); err != nil {
		return nil, err
	}
	return r, nil
}

// waitAvailable watches the Exporters of ns until n of them are available at once (seen on
// the benchmark's watch), and returns when.
func (b *Bench) waitAvailable(ctx context.Context, ns string, n int, alive func() error) (time.Time, error) {
	return b.waitAll(ctx, &jumpstarterv1alpha1.ExporterList{}, ns, n, func(o client.Object) bool {
		return exporterAvailable(o.(*jumpstarterv1alpha1.Exporter))
	}, alive)
}
