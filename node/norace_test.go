//go:build !race

package node_test

// raceEnabled: the race detector slows everything down several times.
const raceEnabled = false
