package exporterset

import (
	"fmt"
	"strconv"
	"time"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// The reuse policy is read from annotations on the ExporterSet or its VirtualTargetClass (the
// set's wins), not from spec fields: upstream's ExporterSet CRD prunes unknown spec fields,
// and upstream's JEP-0014 keeps TTLs off the spec. docs/annotations.md lists them.
const (
	// AnnotationQuarantineTTL is how long a quarantined instance is kept for inspection
	// before it is removed (a duration such as 30m).
	AnnotationQuarantineTTL = "virtualtarget.jumpstarter.dev/quarantine-ttl"
	// AnnotationMaxQuarantined is how many quarantined instances a set keeps at most; older
	// ones are removed first.
	AnnotationMaxQuarantined = "virtualtarget.jumpstarter.dev/max-quarantined"
	// AnnotationMaxUseCount retires an instance under InPlaceReuse after it has served that
	// many leases (0 or absent: no limit).
	AnnotationMaxUseCount = "virtualtarget.jumpstarter.dev/max-use-count"
	// AnnotationMaxIdleAge replaces an instance that has been ready and unleased for longer
	// than this duration (absent: never).
	AnnotationMaxIdleAge = "virtualtarget.jumpstarter.dev/max-idle-age"
)

// Defaults of the reuse policy.
const (
	DefaultQuarantineTTL  = 30 * time.Minute
	DefaultMaxQuarantined = 1
)

// reusePolicy is a set's reuse policy, read once per pass.
type reusePolicy struct {
	quarantineTTL  time.Duration
	maxQuarantined int
	maxUseCount    int           // 0: no limit
	maxIdleAge     time.Duration // 0: never
}

// policyProblem is an annotation that could not be read: the default applies, and the set
// says so (a condition message and an event) until it is fixed.
type policyProblem struct {
	annotation, value, on string // on: "ExporterSet" or "VirtualTargetClass"
	err                   error
}

func (pp policyProblem) String() string {
	return fmt.Sprintf("annotation %s=%q on the %s: %v", pp.annotation, pp.value, pp.on, pp.err)
}

// reusePolicyOf reads the policy from the set's annotations, then the class's (cls may be
// nil). A value that cannot be read is reported and its default used: a typo must not take
// instances out of service.
func reusePolicyOf(set *vtv1alpha1.ExporterSet, cls *vtv1alpha1.VirtualTargetClass) (reusePolicy, []policyProblem) {
	pol := reusePolicy{quarantineTTL: DefaultQuarantineTTL, maxQuarantined: DefaultMaxQuarantined}
	var problems []policyProblem
	lookup := func(key string) (value, on string, ok bool) {
		if v, ok := set.Annotations[key]; ok {
			return v, "ExporterSet", true
		}
		if cls != nil {
			if v, ok := cls.Annotations[key]; ok {
				return v, "VirtualTargetClass", true
			}
		}
		return "", "", false
	}
	duration := func(key string, into *time.Duration, positive bool) {
		v, on, ok := lookup(key)
		if !ok {
			return
		}
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			err = fmt.Errorf("not a duration such as 90s or 30m")
		case d < 0 || positive && d == 0:
			err = fmt.Errorf("must be positive")
		}
		if err != nil {
			problems = append(problems, policyProblem{key, v, on, err})
			return
		}
		*into = d
	}
	count := func(key string, into *int) {
		v, on, ok := lookup(key)
		if !ok {
			return
		}
		n, err := strconv.Atoi(v)
		if err == nil && n < 0 {
			err = fmt.Errorf("negative")
		}
		if err != nil {
			problems = append(problems, policyProblem{key, v, on, fmt.Errorf("not a count such as 0 or 3")})
			return
		}
		*into = n
	}
	duration(AnnotationQuarantineTTL, &pol.quarantineTTL, true)
	count(AnnotationMaxQuarantined, &pol.maxQuarantined)
	count(AnnotationMaxUseCount, &pol.maxUseCount)
	duration(AnnotationMaxIdleAge, &pol.maxIdleAge, true)
	return pol, problems
}
