package pool

import (
	"slices"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// The lead time for bookings is learned from a set's own start-ups: how long an instance
// takes from being created until the lease scheduler can assign it (Registered and Online),
// or under WaitForFirstConsumer from its Pod's creation. The lead is a high percentile of
// the recent times plus a margin.

const (
	// startupSamples is how many recent start-ups the lead time is learned from.
	startupSamples = 20
	// startupFresh bounds how long after becoming available an instance is first seen for
	// its start-up to count: an older one (seen after a controller restart) may have gone
	// offline and back since it started.
	startupFresh = time.Minute
	// leadMarginMin is the least margin added to the measured start-up time; the apiserver
	// keeps times in whole seconds, so a measurement can be short by up to a second.
	leadMarginMin = 2 * time.Second
)

// StartupLog is what a set has measured of its start-ups.
type StartupLog struct {
	// samples are the recent start-up times, the latest last.
	samples []time.Duration
	// seen are the start-ups measured (Exporter UID, or Pod UID under WaitForFirstConsumer)
	// still in the pool, so that none is counted twice.
	seen map[types.UID]bool
}

// LeadTime is the lead for bookings: the 90th percentile of the samples plus a quarter of it
// (at least leadMarginMin); false before anything is measured.
func (l StartupLog) LeadTime() (time.Duration, bool) {
	if len(l.samples) == 0 {
		return 0, false
	}
	s := slices.Clone(l.samples)
	slices.Sort(s)
	p90 := s[(len(s)*9+9)/10-1] // nearest rank
	return p90 + max(leadMarginMin, p90/4), true
}

// Record adds the start-ups of instances not measured before and forgets the measured ones
// no longer in the pool.
func (l StartupLog) Record(instances []*Instance, binding vtv1alpha1.BindingMode, now time.Time) StartupLog {
	seen := make(map[types.UID]bool, len(instances))
	samples := l.samples
	for _, in := range instances {
		// Keep what was measured while it is in the pool: an instance that goes offline and
		// back is not measured again.
		if l.seen[in.Exporter.UID] {
			seen[in.Exporter.UID] = true
		}
		for _, pod := range in.Pods {
			if l.seen[pod.UID] {
				seen[pod.UID] = true
			}
		}
		key, d, ok := measureStartup(in, binding, now)
		if !ok || seen[key] {
			continue
		}
		seen[key] = true
		samples = append(samples, d)
	}
	if n := len(samples); n > startupSamples {
		samples = samples[n-startupSamples:]
	}
	return StartupLog{samples: samples, seen: seen}
}

// measureStartup is how long in took to become available: from the Exporter's creation, or
// under WaitForFirstConsumer from its Pod's, until it was Registered and Online. ok is false
// while it is not available, or when it became so too long ago to tell.
func measureStartup(in *Instance, binding vtv1alpha1.BindingMode, now time.Time) (types.UID, time.Duration, bool) {
	pod := in.ActivePod()
	if pod == nil || !in.Ready() {
		return "", 0, false
	}
	var avail time.Time
	for _, typ := range []string{jumpstarterv1alpha1.ExporterConditionRegistered, jumpstarterv1alpha1.ExporterConditionOnline} {
		c := apimeta.FindStatusCondition(in.Exporter.Status.Conditions, typ)
		if c == nil {
			return "", 0, false
		}
		if c.LastTransitionTime.After(avail) {
			avail = c.LastTransitionTime.Time
		}
	}
	if avail.Before(pod.CreationTimestamp.Time) || now.Sub(avail) > startupFresh {
		return "", 0, false // online before this Pod (a restart), or seen too late to tell
	}
	if binding == vtv1alpha1.BindingWaitForFirstConsumer {
		return pod.UID, avail.Sub(pod.CreationTimestamp.Time), true
	}
	return in.Exporter.UID, avail.Sub(in.Exporter.CreationTimestamp.Time), true
}
