package fieldcheck

import (
	"strconv"
	"strings"
)

// Suggest returns the candidate got most likely meant, or "" when none is close: a case-
// insensitive match, else the nearest by edit distance (transpositions count once) within 1
// edit for short words and 2 for longer ones. Ties go to the earlier candidate.
func Suggest(got string, candidates []string) string {
	lower := strings.ToLower(got)
	best, bestDist := "", 0
	for _, c := range candidates {
		d := EditDistance(lower, strings.ToLower(c))
		if best == "" || d < bestDist {
			best, bestDist = c, d
		}
	}
	limit := 2
	if len(got) <= 4 {
		limit = 1
	}
	if best == "" || bestDist > limit {
		return ""
	}
	return best
}

// EditDistance is the optimal-string-alignment distance between a and b, in bytes. Inputs
// longer than 64 bytes are "far" (a very large distance): keys come from users, so the work
// is bounded.
func EditDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 30
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// QuoteAll quotes and joins values for a message: "a", "b".
func QuoteAll(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}
