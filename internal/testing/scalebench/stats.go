package scalebench

import (
	"math"
	"sort"
	"time"
)

var inf = math.Inf(1)

// median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// percentile of durations by the nearest-rank method, in seconds (0 for none).
func percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(math.Ceil(p/100*float64(len(s)))) - 1
	rank = max(0, min(rank, len(s)-1))
	return s[rank].Seconds()
}

// histogramQuantile estimates quantile q (0..1) of a cumulative Prometheus histogram by
// linear interpolation inside the bucket, as PromQL's histogram_quantile does. buckets map
// upper bounds (+Inf included) to cumulative counts; a quantile in the +Inf bucket reports
// the highest finite bound.
func histogramQuantile(q float64, buckets map[float64]float64) float64 {
	var bounds []float64
	for b := range buckets {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 {
		return 0
	}
	total := buckets[bounds[len(bounds)-1]]
	if total == 0 {
		return 0
	}
	rank := q * total
	prevBound, prevCount := 0.0, 0.0
	for _, b := range bounds {
		c := buckets[b]
		if c >= rank {
			if math.IsInf(b, 1) {
				return prevBound
			}
			if c == prevCount {
				return b
			}
			return prevBound + (b-prevBound)*(rank-prevCount)/(c-prevCount)
		}
		prevBound, prevCount = b, c
	}
	return prevBound
}

// diffBuckets subtracts a from b bucket by bucket.
func diffBuckets(b, a map[float64]float64) map[float64]float64 {
	out := map[float64]float64{}
	for k, v := range b {
		out[k] = v - a[k]
	}
	return out
}
