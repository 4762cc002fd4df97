//go:build !race

package simulation

// raceEnabled reports whether the race detector is on.
const raceEnabled = false
