package realqemu

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/migration/bench"
)

func TestRealiseDebian(t *testing.T) {
	half := 0.5
	for _, tc := range []struct {
		name     string
		p        bench.Profile
		want     Guest
		wantArgs []string
		wantErr  []string // field paths
	}{
		{"idle", profile("1Gi", "64Mi", "0"), Guest{MemoryMiB: 1024, Bandwidth: 64 << 20}, nil, nil},
		{"a rate below one working set per second pauses between passes", profile("1Gi", "64Mi", "8Mi", ws("64Mi")),
			Guest{MemoryMiB: 1024, DirtyMiBPerSec: 8, DirtyMiB: 64, HangSeconds: 8, Bandwidth: 64 << 20},
			[]string{"--vm", "1", "--vm-bytes", "64m", "--vm-keep", "--vm-method", "rand-set", "--vm-madvise", "nohugepage", "--vm-hang", "8", "--timeout", "1h", "--quiet"}, nil},
		{"the pause rounds to whole seconds, at least one", profile("1Gi", "32Mi", "100Mi", ws("128Mi")),
			Guest{MemoryMiB: 1024, DirtyMiBPerSec: 100, DirtyMiB: 128, HangSeconds: 1, Bandwidth: 32 << 20},
			[]string{"--vm", "1", "--vm-bytes", "128m", "--vm-keep", "--vm-method", "rand-set", "--vm-madvise", "nohugepage", "--vm-hang", "1", "--timeout", "1h", "--quiet"}, nil},
		{"a working set per second or more runs flat out", profile("2Gi", "32Mi", "1Gi", ws("256Mi"), func(p *bench.Profile) { p.Shape = sim.ShapeSequential }),
			Guest{MemoryMiB: 2048, DirtyMiBPerSec: 1024, DirtyMiB: 256, Bandwidth: 32 << 20},
			[]string{"--vm", "1", "--vm-bytes", "256m", "--vm-keep", "--vm-method", "rand-set", "--vm-madvise", "nohugepage", "--timeout", "1h", "--quiet"}, nil},
		{"the working set defaults to what the system leaves", profile("1Gi", "32Mi", "2Gi"),
			Guest{MemoryMiB: 1024, DirtyMiBPerSec: 2048, DirtyMiB: 1024 - DebianReserveMiB, Bandwidth: 32 << 20}, nil, nil},
		{"the tiny guest's sizes are too small", profile("256Mi", "8Mi", "0"), Guest{}, nil, []string{"profiles[2].memory"}},
		{"too big", profile("4Gi", "8Mi", "0"), Guest{}, nil, []string{"profiles[2].memory"}},
		{"working set crowds the system out", profile("1Gi", "8Mi", "8Mi", ws("768Mi")), Guest{}, nil, []string{"profiles[2].workingSet"}},
		{"working set under stress-ng's minimum", profile("1Gi", "8Mi", "8Mi", ws("1Mi")), Guest{}, nil, []string{"profiles[2].workingSet"}},
		{"hotset, dips, I/O dirtying", profile("1Gi", "500k", "8Mi", func(p *bench.Profile) {
			p.Shape, p.ThrottleSensitivity = sim.ShapeHotset, &half
			p.Dips = []bench.Dip{{At: 1, Duration: 1, Factor: 0.5}}
		}), Guest{}, nil, []string{"profiles[2].shape", "profiles[2].dips", "profiles[2].throttleSensitivity", "profiles[2].bandwidth"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, errs := RealiseDebian(2, tc.p)
			if tc.wantErr == nil {
				require.Empty(t, errs)
				tc.want.Kind = GuestDebian
				assert.Equal(t, tc.want, g)
				if tc.want.DirtyMiB > 0 && tc.wantArgs != nil {
					assert.Equal(t, tc.wantArgs, g.StressArgs())
				}
				return
			}
			var paths []string
			for _, e := range errs {
				paths = append(paths, e.Field)
			}
			assert.ElementsMatch(t, tc.wantErr, paths, "%v", errs)
		})
	}
	assert.Empty(t, Guest{Kind: GuestDebian, MemoryMiB: 1024}.StressArgs(), "an idle guest runs no stress-ng")
}

func TestBuiltinDebianProfiles(t *testing.T) {
	ps, err := BuiltinDebianProfiles()
	require.NoError(t, err)
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"debian-stress-bursty", "debian-stress-hog"}, names)
	require.NoError(t, RealisableOn(GuestDebian, ps))
	require.Error(t, RealisableOn("windows", ps))
}

func TestDebianDomainXML(t *testing.T) {
	g := Guest{Kind: GuestDebian, MemoryMiB: 1024}
	x := g.DebianDomainXML("vkt-bench-d", "/c/vmlinuz", "/c/initrd.img", "/s/vkt-bench-d.raw")
	for _, want := range []string{
		"<domain type='qemu'>", "<name>vkt-bench-d</name>", "<memory unit='MiB'>1024</memory>",
		"<kernel>/c/vmlinuz</kernel>", "<initrd>/c/initrd.img</initrd>",
		"root=LABEL=virtkit-root", "cloud-init=disabled",
		"<driver name='qemu' type='raw' cache='none'/>", "<source file='/s/vkt-bench-d.raw'/>", "<shareable/>",
		"name='org.qemu.guest_agent.0'",
	} {
		assert.Contains(t, x, want)
	}
}

func TestCloudImageIn(t *testing.T) {
	dir := t.TempDir()
	_, err := CloudImageIn(dir)
	require.Error(t, err)
	for _, f := range []string{"disk.qcow2", "vmlinuz", "initrd.img"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), nil, 0o644))
	}
	c, err := CloudImageIn(dir)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "disk.qcow2"), c.Disk)
	// A relative directory gives absolute paths: libvirt resolves them.
	t.Chdir(filepath.Dir(dir))
	c, err = CloudImageIn(filepath.Base(dir))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "initrd.img"), c.Initrd)
}

func TestOptionsGuest(t *testing.T) {
	o := Options{Guest: GuestDebian, TargetURI: "b"}
	o.Source, o.Target = sim.New(sim.Options{Name: "a"}), sim.New(sim.Options{Name: "b"})
	_, err := o.withDefaults()
	require.ErrorContains(t, err, "CloudImage")
	o.CloudImage, o.ScratchDir = CloudImage{Disk: "d", Kernel: "k", Initrd: "i"}, "/s"
	got, err := o.withDefaults()
	require.NoError(t, err)
	assert.Greater(t, got.BootTimeout, got.MaxTime, "the Debian guest boots for minutes under TCG")
	o.Guest = "windows"
	_, err = o.withDefaults()
	require.ErrorContains(t, err, "windows")
}
