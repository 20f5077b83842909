package core

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// Transitions records every change of the Jumpstarter-visible status of the Exporters and
// Leases of a namespace, as a core (upstream's or jumpsim's) writes it: conditions with
// reason and message, exporterStatus, leaseRef, exporterRef, ended, with the time since the
// recording began. It is what docs/e2e.md's fidelity table compares.
type Transitions struct {
	start time.Time
	mu    sync.Mutex
	last  map[string]string
	lines map[string][]string
}

// Record watches ns's Exporters and Leases until ctx ends.
func Record(ctx context.Context, wc client.WithWatch, ns string) (*Transitions, error) {
	r := &Transitions{start: time.Now(), last: map[string]string{}, lines: map[string][]string{}}
	for _, list := range []client.ObjectList{&jsv1.ExporterList{}, &jsv1.LeaseList{}} {
		w, err := wc.Watch(ctx, list, client.InNamespace(ns))
		if err != nil {
			return nil, err
		}
		go func() {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						return
					}
					if ev.Type == watch.Added || ev.Type == watch.Modified {
						r.observe(ev.Object)
					}
				}
			}
		}()
	}
	return r, nil
}

func (r *Transitions) observe(o any) {
	var key, s string
	switch o := o.(type) {
	case *jsv1.Exporter:
		key = "Exporter " + o.Name
		ref := ""
		if o.Status.LeaseRef != nil {
			ref = o.Status.LeaseRef.Name
		}
		s = fmt.Sprintf("%s %s; exporterStatus %q (%q); leaseRef %q; credential %v",
			cond(o.Status.Conditions, "Online"), cond(o.Status.Conditions, "Registered"),
			o.Status.ExporterStatusValue, o.Status.StatusMessage, ref, o.Status.Credential != nil)
	case *jsv1.Lease:
		key = "Lease " + o.Name
		ref := ""
		if o.Status.ExporterRef != nil {
			ref = o.Status.ExporterRef.Name
		}
		s = fmt.Sprintf("%s %s %s; exporterRef %q; ended %v; release %v",
			cond(o.Status.Conditions, "Pending"), cond(o.Status.Conditions, "Ready"), cond(o.Status.Conditions, "Unsatisfiable"),
			ref, o.Status.Ended, o.Spec.Release)
	default:
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last[key] == s {
		return
	}
	r.last[key] = s
	r.lines[key] = append(r.lines[key], fmt.Sprintf("+%5.1fs %s", time.Since(r.start).Seconds(), s))
}

func cond(cs []metav1.Condition, typ string) string {
	c := apimeta.FindStatusCondition(cs, typ)
	if c == nil {
		return typ + "=-"
	}
	return fmt.Sprintf("%s=%s/%s/%q", typ, c.Status, c.Reason, c.Message)
}

// Of returns the recorded transitions of one object ("Exporter x", "Lease y"), one a line.
func (r *Transitions) Of(key string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lines[key], "\n")
}
