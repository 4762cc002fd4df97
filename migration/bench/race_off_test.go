//go:build !race

package bench

// raceDetector: the race detector slows the simulation about 20-fold.
const raceDetector = false
