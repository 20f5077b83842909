package soak

// takeDue splits items into those due now and the rest, reusing items' array for the rest.
func takeDue[T any](items []T, isDue func(T) bool) (due, rest []T) {
	rest = items[:0]
	for _, it := range items {
		if isDue(it) {
			due = append(due, it)
		} else {
			rest = append(rest, it)
		}
	}
	return due, rest
}
