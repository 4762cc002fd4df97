package bench

import (
	"testing"

	"sigs.k8s.io/yaml"
)

// FuzzDecodeProfiles: the profile decoder never panics, and every profile
// it accepts yields a positive downtime limit and lower bound, a workload,
// a link and a feasibility verdict without panicking, and survives an
// encode/decode round trip.
func FuzzDecodeProfiles(f *testing.F) {
	f.Add([]byte("- name: web\n  memory: 8Gi\n  bandwidth: 1250M\n  dirtyRate: 300M\n  workingSet: 2Gi\n  shape: bursty\n" +
		"  burstPeriod: 30\n  burstFactor: 3\n  throttleSensitivity: 0.5\n  dips:\n  - {at: 20, duration: 10, factor: 0.5}\n" +
		"  allowPostCopy: true\n  allowAutoConverge: true\n  downtimeLimit: 150\n"))
	f.Add([]byte(`[{"name":"idle","memory":"1Gi","bandwidth":"115M","dirtyRate":"0"}]`))
	f.Add([]byte(`[{"name":"dup","name":"x","memory":"1Gi","bandwidth":"115M","dirtyRate":"0"}]`))
	f.Add([]byte("- name: huge\n  memory: 8Ei\n  bandwidth: 1\n  dirtyRate: 8Ei\n  downtimeLimit: 3600000\n"))
	if data, err := yaml.Marshal(BuiltinProfiles()); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := DecodeProfiles(data)
		if err != nil {
			return
		}
		for _, p := range ps {
			if p.Downtime() <= 0 {
				t.Fatalf("profile %q: downtime %v", p.Name, p.Downtime())
			}
			if p.LowerBound() < 0 {
				t.Fatalf("profile %q: lower bound %v", p.Name, p.LowerBound())
			}
			_ = p.Workload()
			_ = p.Link()
			_, _ = p.Feasible()
		}
		again, err := yaml.Marshal(ps)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		if _, err := DecodeProfiles(again); err != nil {
			t.Fatalf("accepted profiles do not decode again: %v\n%s", err, again)
		}
	})
}
