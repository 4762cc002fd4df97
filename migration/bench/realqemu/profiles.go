package realqemu

import (
	_ "embed"

	"github.com/virtkit/virtkit/migration/bench"
)

//go:embed profiles.yaml
var builtinProfiles []byte

// BuiltinProfiles are the real benchmark's four workloads on the 256 MiB
// tiny guest: idle, convergent, throttle-needed (auto-converge allowed,
// dirtying CPU-bound so a throttle slows it) and hopeless (dirtying far
// above the bandwidth, nothing allowed that could help).
func BuiltinProfiles() ([]bench.Profile, error) {
	return bench.DecodeProfiles(builtinProfiles)
}
