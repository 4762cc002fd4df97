package realqemu

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/migration/bench"
)

func profile(mem, bw, dirty string, mutate ...func(*bench.Profile)) bench.Profile {
	p := bench.Profile{Name: "p", Memory: resource.MustParse(mem), Bandwidth: resource.MustParse(bw), DirtyRate: resource.MustParse(dirty)}
	for _, m := range mutate {
		m(&p)
	}
	return p
}

func ws(q string) func(*bench.Profile) {
	return func(p *bench.Profile) { v := resource.MustParse(q); p.WorkingSet = &v }
}

func TestRealise(t *testing.T) {
	one, half := 1.0, 0.5
	for _, tc := range []struct {
		name    string
		p       bench.Profile
		want    Guest
		wantErr []string // field paths
	}{
		{"idle", profile("256Mi", "64Mi", "0"), Guest{MemoryMiB: 256, Bandwidth: 64 << 20}, nil},
		{"dirtier with a working set", profile("256Mi", "8Mi", "64Mi", ws("128Mi")),
			Guest{MemoryMiB: 256, DirtyMiBPerSec: 64, DirtyMiB: 128, Bandwidth: 8 << 20}, nil},
		{"working set defaults to what the kernel leaves", profile("128Mi", "8Mi", "16Mi"),
			Guest{MemoryMiB: 128, DirtyMiBPerSec: 16, DirtyMiB: 128 - KernelReserveMiB, Bandwidth: 8 << 20}, nil},
		{"decimal rates round to MiB/s; bandwidth rounds up", profile("256Mi", "10M", "5M", ws("32Mi")),
			Guest{MemoryMiB: 256, DirtyMiBPerSec: 5, DirtyMiB: 32, Bandwidth: 10 << 20}, nil},
		{"a tiny nonzero rate still dirties", profile("256Mi", "8Mi", "1k", ws("32Mi")),
			Guest{MemoryMiB: 256, DirtyMiBPerSec: 1, DirtyMiB: 32, Bandwidth: 8 << 20}, nil},
		{"sequential and sensitivity 1 are what the dirtier does", profile("256Mi", "8Mi", "8Mi", ws("32Mi"),
			func(p *bench.Profile) { p.Shape = sim.ShapeSequential; p.ThrottleSensitivity = &one }),
			Guest{MemoryMiB: 256, DirtyMiBPerSec: 8, DirtyMiB: 32, Bandwidth: 8 << 20}, nil},
		{"too small", profile("64Mi", "8Mi", "0"), Guest{}, []string{"profiles[3].memory"}},
		{"too big", profile("8Gi", "8Mi", "0"), Guest{}, []string{"profiles[3].memory"}},
		{"working set crowds the kernel out", profile("128Mi", "8Mi", "8Mi", ws("64Mi")), Guest{}, []string{"profiles[3].workingSet"}},
		{"bandwidth under 1 MiB/s", profile("128Mi", "500k", "0"), Guest{}, []string{"profiles[3].bandwidth"}},
		{"hotset", profile("256Mi", "8Mi", "8Mi", func(p *bench.Profile) { p.Shape = sim.ShapeHotset }), Guest{}, []string{"profiles[3].shape"}},
		{"bursts and dips", profile("256Mi", "8Mi", "8Mi", func(p *bench.Profile) {
			p.Shape, p.BurstPeriod, p.BurstFactor = sim.ShapeBursty, 30, 4
			p.Dips = []bench.Dip{{At: 1, Duration: 1, Factor: 0.5}}
		}), Guest{}, []string{"profiles[3].shape", "profiles[3].dips", "profiles[3].burstPeriod"}},
		{"I/O-driven dirtying", profile("256Mi", "8Mi", "8Mi", func(p *bench.Profile) { p.ThrottleSensitivity = &half }),
			Guest{}, []string{"profiles[3].throttleSensitivity"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, errs := Realise(3, tc.p)
			if tc.wantErr == nil {
				require.Empty(t, errs)
				tc.want.Kind = GuestTiny
				assert.Equal(t, tc.want, g)
				return
			}
			var paths []string
			for _, e := range errs {
				paths = append(paths, e.Field)
			}
			assert.ElementsMatch(t, tc.wantErr, paths, "%v", errs)
		})
	}
}

func TestBuiltinProfiles(t *testing.T) {
	ps, err := BuiltinProfiles()
	require.NoError(t, err)
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"idle", "convergent", "throttle-needed", "hopeless"}, names)
	require.NoError(t, Realisable(ps))
}

func TestRealisableNamesEveryProblem(t *testing.T) {
	err := Realisable([]bench.Profile{profile("256Mi", "8Mi", "0"), profile("64Mi", "8Mi", "0", func(p *bench.Profile) { p.Name = "q" })})
	require.ErrorIs(t, err, bench.ErrInvalidProfile)
	assert.Contains(t, err.Error(), "profiles[1].memory")
	assert.NotContains(t, err.Error(), "profiles[0]")
}

func TestGuestDomainXML(t *testing.T) {
	g := Guest{MemoryMiB: 256, DirtyMiBPerSec: 64, DirtyMiB: 128}
	x := g.DomainXML("vkt-bench-a", "/k/vmlinuz", "/k/initrd&.gz")
	for _, want := range []string{
		"<domain type='qemu'>", "<name>vkt-bench-a</name>", "<memory unit='MiB'>256</memory>",
		"<kernel>/k/vmlinuz</kernel>", "<initrd>/k/initrd&amp;.gz</initrd>",
		"<cmdline>console=ttyS0 quiet panic=-1 dirty_mb_s=64 dirty_mb=128</cmdline>",
		"name='org.qemu.guest_agent.0'",
	} {
		assert.Contains(t, x, want)
	}
	assert.NotContains(t, Guest{MemoryMiB: 128}.KernelArgs(), "dirty_mb_s", "an idle guest starts no dirtier")
}

func TestDomainName(t *testing.T) {
	assert.Equal(t, "vkt-bench-throttle-needed-kubevirt-ac-pc", domainName("throttle-needed", "kubevirt-ac-pc"))
	assert.Equal(t, "vkt-bench-p2-web-tier-virtkit", domainName("P2 web/tier", "virtkit"))
	assert.LessOrEqual(t, len(domainName(strings.Repeat("x", 100), "virtkit")), 60)
}
