package realqemu

import (
	_ "embed"

	"github.com/virtkit/virtkit/migration/bench"
)

//go:embed profiles.yaml
var builtinProfiles []byte

//go:embed profiles-debian.yaml
var builtinDebianProfiles []byte

// BuiltinProfiles are the real benchmark's four workloads on the 256 MiB
// tiny guest: idle, convergent, throttle-needed (auto-converge allowed,
// dirtying CPU-bound so a throttle slows it) and hopeless (dirtying far
// above the bandwidth, nothing allowed that could help).
func BuiltinProfiles() ([]bench.Profile, error) {
	return bench.DecodeProfiles(builtinProfiles)
}

// BuiltinDebianProfiles are the real benchmark's workloads on the 1 GiB
// Debian cloud image with stress-ng: a bursty writer pre-copy moves
// between its bursts, and a flat-out writer over 256 MiB that only
// post-copy (or a throttle) can move over its 32 MiB/s link.
func BuiltinDebianProfiles() ([]bench.Profile, error) {
	return bench.DecodeProfiles(builtinDebianProfiles)
}
