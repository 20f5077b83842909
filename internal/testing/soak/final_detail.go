package soak

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	expool "github.com/exporterset/exporterset/exporterset/pool"
)

// detail describes a set that did not converge beyond the counters: its conditions and, per
// instance, the Exporter's conditions and every Pod's phase, readiness and waiting or
// terminated reasons. It only feeds failure messages, so that a walk that did not converge
// can be diagnosed from its report alone.
func detail(set *vtv1alpha1.ExporterSet, exporters []*jumpstarterv1alpha1.Exporter, byOwner map[types.UID][]*corev1.Pod) string {
	var b strings.Builder
	b.WriteString("set conditions:")
	for _, c := range set.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message)
	}
	for _, e := range exporters {
		fmt.Fprintf(&b, "; exporter %s enabled=%v spechash=%s", e.Name, e.IsEnabled(), e.Labels[expool.LabelSpecHash])
		for _, t := range []string{"Registered", "Online"} {
			if c := meta.FindStatusCondition(e.Status.Conditions, t); c != nil {
				fmt.Fprintf(&b, " %s=%s(%s)", t, c.Status, c.Reason)
			}
		}
		pods := byOwner[e.UID]
		if len(pods) == 0 {
			b.WriteString(" no pod")
		}
		for _, p := range pods {
			fmt.Fprintf(&b, " pod %s %s", p.Name, p.Status.Phase)
			if p.Status.Reason != "" {
				fmt.Fprintf(&b, "/%s", p.Status.Reason)
			}
			if p.DeletionTimestamp != nil {
				b.WriteString(" deleting")
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady || c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
					fmt.Fprintf(&b, " %s=%s", c.Type, c.Status)
				}
			}
			for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
				switch {
				case cs.State.Waiting != nil:
					fmt.Fprintf(&b, " %s:waiting/%s", cs.Name, cs.State.Waiting.Reason)
				case cs.State.Terminated != nil:
					fmt.Fprintf(&b, " %s:terminated/%s(%d)", cs.Name, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode)
				}
			}
		}
	}
	return b.String()
}
