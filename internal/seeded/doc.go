// Package seeded gives the components of a cluster their own random
// streams derived from one seed, so that a scenario on virtual time makes
// the same random choices on every run. Each stream is safe for concurrent
// use; components that draw concurrently get separate streams (named), so
// the values one draws do not depend on how the goroutines interleave.
package seeded
