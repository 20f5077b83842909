//go:build !race

package jumpsim

const raceEnabled = false
