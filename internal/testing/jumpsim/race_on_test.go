//go:build race

package jumpsim

// raceEnabled lets load tests shrink under the race detector, which slows them down tenfold.
const raceEnabled = true
