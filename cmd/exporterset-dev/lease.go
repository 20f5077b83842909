package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/internal/controllerapp"
)

// leaseCommand takes a lease in a running environment, as a Jumpstarter client would (`jmp
// create lease`), and waits until it is assigned; with --release it ends one.
func leaseCommand(args []string) error {
	fs := flag.NewFlagSet("exporterset-dev lease", flag.ContinueOnError)
	stateDir := fs.String("state-dir", defaultStateDir(), "State directory of the running environment (its --state-dir).")
	selector := fs.String("selector", "board=x86-64-virtual", "Label selector of the exporters to lease (key=value).")
	release := fs.String("release", "", "Release this lease instead of taking one.")
	duration := fs.Duration("duration", 30*time.Minute, "Lease duration.")
	wait := fs.Duration("wait", time.Minute, "How long to wait for the assignment.")
	if err := controllerapp.Parse(fs, args); err != nil {
		return err
	}
	cfg, err := controllerapp.RestConfig(filepath.Join(*stateDir, "kubeconfig"))
	if err != nil {
		return fmt.Errorf("%w (is `make run` running?)", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: controllerapp.NewScheme()})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *wait)
	defer cancel()
	if *release != "" {
		var l jumpstarterv1alpha1.Lease
		if err := c.Get(ctx, client.ObjectKey{Namespace: devNamespace, Name: *release}, &l); err != nil {
			return err
		}
		patched := l.DeepCopy()
		patched.Spec.Release = true
		if err := c.Patch(ctx, patched, client.MergeFrom(&l)); err != nil {
			return err
		}
		fmt.Printf("released lease %s\n", *release)
		return nil
	}
	sel, err := metav1.ParseToLabelSelector(*selector)
	if err != nil {
		return controllerapp.UsageError{Err: fmt.Errorf("--selector: %w", err)}
	}
	l := &jumpstarterv1alpha1.Lease{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "dev-lease-", Namespace: devNamespace},
		Spec: jumpstarterv1alpha1.LeaseSpec{ClientRef: corev1.LocalObjectReference{Name: "dev"}, Selector: *sel,
			Duration: &metav1.Duration{Duration: *duration}},
	}
	if err := c.Create(ctx, l); err != nil {
		return err
	}
	fmt.Printf("created lease %s, waiting for an exporter ...\n", l.Name)
	for {
		if err := c.Get(ctx, client.ObjectKeyFromObject(l), l); err != nil {
			return err
		}
		if l.Status.ExporterRef != nil {
			fmt.Printf("lease %s holds exporter %s; release it with: %s\n", l.Name, l.Status.ExporterRef.Name,
				selfCommand(append(append([]string{"lease"}, stateDirArgs(*stateDir)...), "--release", l.Name)...))
			return nil
		}
		if l.Status.Ended {
			return fmt.Errorf("lease %s ended without an exporter: %v", l.Name, l.Status.Conditions)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("lease %s not assigned within %s", l.Name, *wait)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
