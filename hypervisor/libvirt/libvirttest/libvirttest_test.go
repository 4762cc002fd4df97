package libvirttest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
	"github.com/virtkit/virtkit/internal/testenv"
)

func fakeGuest(t *testing.T) libvirttest.Guest {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"vmlinuz", "initramfs.gz"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644))
	}
	t.Setenv("VIRTKIT_GUEST_DIR", dir)
	g, err := libvirttest.FindGuest()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "vmlinuz"), g.Kernel)
	assert.Equal(t, filepath.Join(dir, "initramfs.gz"), g.Initramfs)
	return g
}

func TestFindGuestMissing(t *testing.T) {
	t.Setenv("VIRTKIT_GUEST_DIR", t.TempDir())
	_, err := libvirttest.FindGuest()
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestGuestDomainXML(t *testing.T) {
	g := fakeGuest(t)
	for _, tc := range []struct {
		name    string
		opts    libvirttest.GuestOptions
		memKiB  uint
		cmdline string
	}{
		{"Defaults", libvirttest.GuestOptions{}, 128 << 10, "console=ttyS0 quiet panic=-1"},
		{"Dirtying", libvirttest.GuestOptions{MemoryMiB: 256, VCPUs: 2, DirtyMiBPerSec: 32},
			256 << 10, "console=ttyS0 quiet panic=-1 dirty_mb_s=32 dirty_mb=48"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d libvirtxml.Domain
			require.NoError(t, d.Unmarshal(g.DomainXML("vm-"+tc.name, tc.opts)))
			assert.Equal(t, "qemu", d.Type, "TCG: nested KVM is too slow")
			assert.Equal(t, "vm-"+tc.name, d.Name)
			assert.Empty(t, d.UUID, "the backend assigns the UUID")
			assert.Equal(t, tc.memKiB, d.Memory.Value<<10, "memory in MiB")
			assert.Equal(t, tc.cmdline, d.OS.Cmdline)
			assert.Equal(t, g.Kernel, d.OS.Kernel)
			require.Len(t, d.Devices.Channels, 1)
			assert.Equal(t, "org.qemu.guest_agent.0", d.Devices.Channels[0].Target.VirtIO.Name)
			assert.NotNil(t, d.Features.ACPI, "ACPI for graceful shutdown")
		})
	}
}

// TestDomainXMLValidates checks both documents against libvirt's schema.
func TestDomainXMLValidates(t *testing.T) {
	validate := testenv.LookTool(t, "virt-xml-validate", "Debian libvirt-clients and libxml2-utils")
	g := fakeGuest(t)
	for name, doc := range map[string]string{
		"guest": g.DomainXML("vm", libvirttest.GuestOptions{DirtyMiBPerSec: 8}),
		"test":  libvirttest.TestDomainXML("vm"),
	} {
		f := filepath.Join(t.TempDir(), name+".xml")
		require.NoError(t, os.WriteFile(f, []byte(doc), 0o644))
		out, err := exec.Command(validate, f, "domain").CombinedOutput()
		require.NoError(t, err, "%s: %s", name, out)
	}
}

func TestXMLEscapesName(t *testing.T) {
	var d libvirtxml.Domain
	require.NoError(t, d.Unmarshal(libvirttest.TestDomainXML("a<b&'c")))
	assert.Equal(t, "a<b&'c", d.Name)
}

func TestMigrateURI(t *testing.T) {
	uri := libvirttest.MigrateURI(t)
	assert.True(t, strings.HasPrefix(uri, "tcp://127.0.0.1:"), uri)
	assert.NotEqual(t, "tcp://127.0.0.1:0", uri)
}
