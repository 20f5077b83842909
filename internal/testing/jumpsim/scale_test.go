package jumpsim

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// parallel runs f(0..n-1), 32 at a time, and returns the first error.
func parallel(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	sem := make(chan struct{}, 32)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs <- f(ctx, i)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Many leases racing for fewer exporters (JUMPSIM_LOAD_EXPORTERS, default 100, and half as
// many more leases): every exporter is held by at most one lease, the
// rest wait NotAvailable, and they are served as exporters are released.
func TestSchedulerUnderLoad(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("load test")
	}
	exporters := 100
	if raceEnabled {
		exporters = 30
	}
	if n, err := strconv.Atoi(os.Getenv("JUMPSIM_LOAD_EXPORTERS")); err == nil && n > 0 {
		exporters = n // e.g. 500 for a soak-sized run
	}
	leases := exporters * 3 / 2
	sim, ns := startSim(t, WithWorkers(16))
	ctx := testCtx(t)
	start := time.Now()
	err := parallel(ctx, exporters, func(ctx context.Context, i int) error {
		ex := &jsv1.Exporter{}
		ex.Namespace, ex.Name, ex.Labels = ns, fmt.Sprintf("exp-%03d", i), board
		if err := env.Client.Create(ctx, ex); err != nil {
			return err
		}
		sec := configSecretFor(ex, false)
		pod := exporterPod(ex, ex.Name)
		for _, o := range []client.Object{sec, pod} {
			if err := controllerutil.SetControllerReference(ex, o, env.Scheme); err != nil {
				return err
			}
			if err := env.Client.Create(ctx, o); err != nil {
				return err
			}
		}
		_, err := sim.WaitExporterReady(ctx, ns, ex.Name)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d exporters ready in %s", exporters, time.Since(start))

	start = time.Now()
	if err := parallel(ctx, leases, func(ctx context.Context, i int) error {
		_, err := sim.TakeLease(ctx, ns, fmt.Sprintf("lease-%03d", i), board, 0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	assigned := waitAssignments(t, ns, exporters, leases-exporters)
	t.Logf("%d leases settled in %s", leases, time.Since(start))

	// Release every assigned lease: the waiting ones take over the freed exporters.
	start = time.Now()
	if err := parallel(ctx, len(assigned), func(ctx context.Context, i int) error {
		return sim.ReleaseLease(ctx, ns, assigned[i])
	}); err != nil {
		t.Fatal(err)
	}
	waitAssignments(t, ns, leases-exporters, 0)
	t.Logf("released and reassigned in %s", time.Since(start))
	if n := sim.Count(ActionAnomaly); n != 0 {
		t.Fatalf("%d anomalies", n)
	}
}

// waitAssignments waits until exactly wantActive leases hold distinct exporters (whose
// leaseRef names them back) and wantWaiting wait NotAvailable; it returns the active ones.
func waitAssignments(t *testing.T, ns string, wantActive, wantWaiting int) []string {
	t.Helper()
	var active []string
	eventually(t, 60*time.Second, func() error {
		var list jsv1.LeaseList
		if err := env.Client.List(testCtx(t), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		holder := map[string]string{}
		active = active[:0]
		waiting := 0
		for _, l := range list.Items {
			switch {
			case l.Status.Ended:
			case l.Status.ExporterRef != nil:
				if other, dup := holder[l.Status.ExporterRef.Name]; dup {
					t.Fatalf("exporter %s assigned to both %s and %s", l.Status.ExporterRef.Name, other, l.Name)
				}
				holder[l.Status.ExporterRef.Name] = l.Name
				active = append(active, l.Name)
			default:
				if c := meta.FindStatusCondition(l.Status.Conditions, jsv1.LeaseConditionPending); c != nil && c.Reason == ReasonNotAvailable {
					waiting++
				}
			}
		}
		if len(active) != wantActive || waiting != wantWaiting {
			return fmt.Errorf("%d active (want %d), %d waiting NotAvailable (want %d)", len(active), wantActive, waiting, wantWaiting)
		}
		var exps jsv1.ExporterList
		if err := env.Client.List(testCtx(t), &exps, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, ex := range exps.Items {
			want, held := holder[ex.Name]
			switch {
			case held && (ex.Status.LeaseRef == nil || ex.Status.LeaseRef.Name != want):
				return fmt.Errorf("exporter %s leaseRef %v, want %s", ex.Name, ex.Status.LeaseRef, want)
			case !held && ex.Status.LeaseRef != nil:
				return fmt.Errorf("exporter %s leaseRef %v, held by none", ex.Name, ex.Status.LeaseRef)
			}
		}
		return nil
	})
	return active
}
