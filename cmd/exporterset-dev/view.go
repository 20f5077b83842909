package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// liveView draws the pools of a namespace: each set's counters and instances, and recent
// events. On a terminal it redraws in place; otherwise it prints a frame only when it changed.
type liveView struct {
	c           client.Client
	namespace   string
	started     time.Time
	interactive bool
	last        string
	warmAt      map[string]time.Duration
}

func (v *liveView) draw(ctx context.Context, w io.Writer) {
	frame := v.render(ctx)
	if frame == v.last {
		return
	}
	v.last = frame
	if v.interactive {
		fmt.Fprint(w, "\033[H\033[2J")
	} else {
		fmt.Fprintf(w, "--- %s\n", time.Since(v.started).Round(time.Second))
	}
	fmt.Fprint(w, frame)
}

func (v *liveView) render(ctx context.Context) string {
	var b strings.Builder
	var sets vtv1alpha1.ExporterSetList
	if err := v.c.List(ctx, &sets, client.InNamespace(v.namespace)); err != nil {
		return fmt.Sprintf("listing exportersets: %v\n", err)
	}
	var exporters jumpstarterv1alpha1.ExporterList
	_ = v.c.List(ctx, &exporters, client.InNamespace(v.namespace))
	var pods corev1.PodList
	_ = v.c.List(ctx, &pods, client.InNamespace(v.namespace))
	phase := map[string]corev1.PodPhase{}
	for _, p := range pods.Items {
		phase[p.Name] = p.Status.Phase
	}
	if v.warmAt == nil {
		v.warmAt = map[string]time.Duration{}
	}
	for _, s := range sets.Items {
		st := s.Status
		if _, done := v.warmAt[s.Name]; !done && st.Replicas > 0 && st.AvailableReplicas >= s.Spec.MinAvailableReplicas && st.ReadyReplicas > 0 {
			v.warmAt[s.Name] = time.Since(v.started)
		}
		fmt.Fprintf(&b, "ExporterSet %s/%s  class=%s  min=%d max=%s minAvailable=%d\n", s.Namespace, s.Name, s.Spec.VirtualTargetClassName,
			s.Spec.MinReplicas, maxString(s.Spec.MaxReplicas), s.Spec.MinAvailableReplicas)
		fmt.Fprintf(&b, "  replicas=%d ready=%d available=%d leased=%d unavailable=%d  pods pending=%d running=%d failed=%d\n",
			st.Replicas, st.ReadyReplicas, st.AvailableReplicas, st.LeasedReplicas, st.UnavailableReplicas, st.PodsPending, st.PodsRunning, st.PodsFailed)
		if d, ok := v.warmAt[s.Name]; ok {
			fmt.Fprintf(&b, "  warm pool ready %s after start\n", d.Round(100*time.Millisecond))
		}
		for _, c := range st.Conditions {
			fmt.Fprintf(&b, "  %-15s %-5s %-22s %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
		tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  INSTANCE\tENABLED\tONLINE\tREGISTERED\tLEASE\tPOD")
		for _, e := range exporters.Items {
			if e.Labels[pool.LabelSet] != s.Name {
				continue
			}
			lease := "-"
			if e.Status.LeaseRef != nil {
				lease = e.Status.LeaseRef.Name
			}
			pod := string(phase[e.Name])
			if pod == "" {
				pod = "-"
			}
			fmt.Fprintf(tw, "  %s\t%v\t%v\t%v\t%s\t%s\n", e.Name, e.IsEnabled(),
				apimeta.IsStatusConditionTrue(e.Status.Conditions, jumpstarterv1alpha1.ExporterConditionOnline),
				apimeta.IsStatusConditionTrue(e.Status.Conditions, jumpstarterv1alpha1.ExporterConditionRegistered), lease, pod)
		}
		_ = tw.Flush()
		b.WriteString("\n")
	}
	var events eventsv1.EventList
	if err := v.c.List(ctx, &events, client.InNamespace(v.namespace)); err == nil {
		sort.Slice(events.Items, func(i, j int) bool { return eventTime(&events.Items[i]).Before(eventTime(&events.Items[j])) })
		items := events.Items
		if len(items) > 8 {
			items = items[len(items)-8:]
		}
		b.WriteString("Recent events:\n")
		for _, e := range items {
			fmt.Fprintf(&b, "  %-8s %-12s %s\n", e.Type, e.Reason, e.Note)
		}
	}
	return b.String()
}

func eventTime(e *eventsv1.Event) time.Time {
	if !e.EventTime.IsZero() {
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

func maxString(m *int32) string {
	if m == nil || *m == 0 {
		return "unbounded"
	}
	return fmt.Sprint(*m)
}
