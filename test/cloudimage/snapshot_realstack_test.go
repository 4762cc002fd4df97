//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package cloudimage_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/store"
)

const (
	snapNamespace = "realsnap"
	snapNode      = "realsnap-node"
	// Files the test writes in the guest: before the snapshot, after it.
	fileBefore = "/var/tmp/realsnap-before"
	fileAfter  = "/var/tmp/realsnap-after"
	// snapTimeout bounds each snapshot, restore and clone on a loaded
	// machine (the online snapshot copies the whole disk).
	snapTimeout = 5 * time.Minute
)

// TestRealSnapshotRestoreClone takes an online snapshot of a running
// Debian guest whose root disk is a DataVolume on the node's local
// storage: a file written before the snapshot is in every VM made from
// it, a file written after it in none. The snapshot freezes the guest's
// filesystems through its real qemu-ga (indications Online and
// GuestAgent) while libvirt's backup job copies the disk. The snapshot is
// then restored into the stopped source VM and into a new VM, and cloned
// into a third VM with a new MAC; the three boot side by side, and the
// clone's guest sees its own MAC and firmware UUID. Three guests keep
// both cores busy: the test runs alone (no parallelLane), on libvirtd A.
func TestRealSnapshotRestoreClone(t *testing.T) {
	img := requireCloudStack(t)
	if _, err := exec.LookPath("qemu-img"); err != nil {
		unavailable(t, "qemu-img not installed; "+howTo)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(img)))
	defer srv.Close()
	data, err := os.ReadFile("testdata/snapshot-vm.yaml")
	require.NoError(t, err)
	objs, err := virtkit.DecodeBytes([]byte(strings.ReplaceAll(string(data), "HTTP_HOST", strings.TrimPrefix(srv.URL, "http://"))))
	require.NoError(t, err)
	require.Len(t, objs, 5)
	vm := objs[0].(*virtkit.VirtualMachine)
	snapshot := objs[1].(*virtkit.VirtualMachineSnapshot)
	clone := objs[2].(*virtkit.VirtualMachineClone)
	restoreSame := objs[3].(*virtkit.VirtualMachineRestore)
	restoreNew := objs[4].(*virtkit.VirtualMachineRestore)
	srcMAC := vm.Spec.Template.Spec.Domain.Devices.Interfaces[0].MacAddress
	cloneMAC := clone.Spec.NewMacAddresses["default"]

	// A node name of its own: a node agent removes the domains that name
	// its node and that no VMI of its cluster owns, and the other tests
	// of this package name their node img-a.
	c := startCluster(t, img, func(o *cluster.Options) { o.NodeNames = []string{snapNode} })
	ctx, cancel := context.WithTimeout(context.Background(), importTimeout+4*bootTimeout)
	defer cancel()
	names := []string{vm.Name, restoreNew.Spec.Target.Name, clone.Spec.Target.Name}
	hv := c.Node(snapNode).Hypervisor
	for _, n := range names {
		v := &virtkit.VirtualMachine{}
		v.Namespace, v.Name = snapNamespace, n
		// A guest an interrupted run left behind.
		dom := snapNamespace + "_" + n
		if err := hv.Destroy(ctx, dom); err == nil {
			t.Logf("destroyed a leftover %s", dom)
		}
		_ = hv.Undefine(ctx, dom)
		t.Cleanup(func() { deleteVM(t, c, v) })
	}

	// The source boots from its imported disk; the guest writes the
	// first file and syncs it.
	start := time.Now()
	require.NoError(t, c.Apply(ctx, vm))
	waitDebianGuest(ctx, t, c, snapNamespace, vm.Name, start)
	g := agentOf(t, c, vm.Name)
	guestWrite(ctx, t, g, fileBefore)

	// The online snapshot: frozen through the real agent, then thawed.
	start = time.Now()
	require.NoError(t, c.Apply(ctx, snapshot))
	snap := waitSnapshot(ctx, t, c, snapshot.Name)
	t.Logf("online snapshot: %s", time.Since(start).Round(100*time.Millisecond))
	assert.Equal(t, []virtkit.Indication{virtkit.SnapshotIndicationOnline, virtkit.SnapshotIndicationGuestAgent}, snap.Status.Indications)
	require.NotNil(t, snap.Status.SnapshotVolumes)
	assert.Equal(t, []string{"rootdisk"}, snap.Status.SnapshotVolumes.IncludedVolumes)
	content := &virtkit.VirtualMachineSnapshotContent{}
	require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: snapNamespace, Name: *snap.Status.VirtualMachineSnapshotContentName}, content))
	require.Len(t, content.Status.VolumeSnapshotStatus, 1)
	assert.True(t, *content.Status.VolumeSnapshotStatus[0].ReadyToUse)
	// The disk was copied by libvirt's backup job (the last job of the
	// domain), not read as a file.
	if virsh, err := exec.LookPath("virsh"); err == nil {
		out, err := exec.CommandContext(ctx, virsh, "-c", sourceURI, "domjobinfo", snapNamespace+"_"+vm.Name, "--completed", "--keep-completed").CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Regexp(t, `Operation:\s+Backup`, string(out))
		assert.Regexp(t, `Job type:\s+Completed`, string(out))
	}
	fs, err := g.c.FSFreezeStatus(ctx)
	require.NoError(t, err)
	assert.Equal(t, guestagent.FreezeStatusThawed, fs, "the guest is thawed after the snapshot")
	journal, err := g.exec(ctx, "/usr/bin/journalctl", "-b", "--no-pager", "-o", "cat", "-t", "qemu-ga")
	require.NoError(t, err)
	// qemu-ga logs a freeze (a thaw it does not; the status above says it).
	assert.Contains(t, journal.Stdout, "guest-fsfreeze called", "the guest's agent froze its filesystems")

	// After the snapshot: the second file; the source's identity.
	guestWrite(ctx, t, g, fileAfter)
	requireMAC(ctx, t, g, srcMAC, "")
	srcUUID := productUUID(ctx, t, g)

	// A clone and a restore into a new VM while the source runs; the
	// restore into the source once it is stopped.
	start = time.Now()
	require.NoError(t, c.Apply(ctx, clone, restoreNew))
	require.NoError(t, actions.Stop(ctx, c.Store(), store.Key{Namespace: snapNamespace, Name: vm.Name}, actions.StopOptions{}))
	_, err = c.WaitForVMI(ctx, snapNamespace, vm.Name, cluster.Gone[*virtkit.VirtualMachineInstance]())
	require.NoError(t, err)
	require.NoError(t, c.Apply(ctx, restoreSame))
	same := waitRestore(ctx, t, c, restoreSame.Name)
	assert.Equal(t, []string{vm.Spec.DataVolumeTemplates[0].ObjectMeta.Name}, same.Status.DeletedDataVolumes, "the replaced disk is deleted")
	waitRestore(ctx, t, c, restoreNew.Name)
	waitClone(ctx, t, c, clone.Name)
	t.Logf("clone and restores: %s", time.Since(start).Round(100*time.Millisecond))

	// The three VMs boot side by side.
	start = time.Now()
	for _, n := range names {
		require.NoError(t, actions.Start(ctx, c.Store(), store.Key{Namespace: snapNamespace, Name: n}, actions.StartOptions{}))
	}
	var wg sync.WaitGroup
	bootErrs := make([]error, len(names))
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bctx, bcancel := context.WithTimeout(ctx, bootTimeout)
			defer bcancel()
			v, err := c.WaitForVMI(bctx, snapNamespace, n, func(v *virtkit.VirtualMachineInstance, found bool) bool {
				return found && (v.IsFinal() || v.IsRunning() &&
					virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected))
			})
			if err == nil && v.IsFinal() {
				err = fmt.Errorf("VMI ended: %s", v.Status.Phase)
			}
			bootErrs[i] = err
		}()
	}
	wg.Wait()
	for i, n := range names {
		if bootErrs[i] != nil {
			dumpVMI(t, c, n)
		}
	}
	for i, n := range names {
		require.NoError(t, bootErrs[i], "VM %s boots to its guest agent", n)
	}
	t.Logf("three restored guests to their agents: %s", time.Since(start).Round(100*time.Millisecond))

	guests := make([]guest, len(names))
	for i, n := range names {
		guests[i] = agentOf(t, c, n)
	}

	for i, n := range names {
		got, err := guests[i].readFile(ctx, fileBefore)
		if assert.NoError(t, err, "%s: the file written before the snapshot is there", n) {
			assert.Equal(t, fileBefore+"\n", string(got), n)
		}
		r, err := guests[i].exec(ctx, "/usr/bin/test", "-e", fileAfter)
		require.NoError(t, err)
		assert.Equal(t, 1, r.Code, "%s: the file written after the snapshot is gone", n)
	}
	requireMAC(ctx, t, guests[0], srcMAC, "")
	requireMAC(ctx, t, guests[2], cloneMAC, srcMAC)
	cloneVM := &virtkit.VirtualMachine{}
	require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: snapNamespace, Name: clone.Spec.Target.Name}, cloneVM))
	assert.Equal(t, cloneMAC, cloneVM.Spec.Template.Spec.Domain.Devices.Interfaces[0].MacAddress)
	cloneUUID := productUUID(ctx, t, guests[2])
	assert.NotEqual(t, srcUUID, cloneUUID, "the clone has its own firmware UUID")
	assert.Equal(t, strings.ToLower(string(cloneVM.Spec.Template.Spec.Domain.Firmware.UUID)), cloneUUID)
	assert.Equal(t, srcUUID, productUUID(ctx, t, guests[0]), "the restored source keeps its firmware UUID")
	assert.NotEqual(t, srcUUID, productUUID(ctx, t, guests[1]), "a VM restored under a new name has its own")
}

// agentOf is a client of the guest agent of VM name's running VMI.
func agentOf(t *testing.T, c *cluster.Cluster, name string) guest {
	t.Helper()
	vmi := &virtkit.VirtualMachineInstance{}
	require.NoError(t, c.Store().Get(context.Background(), store.Key{Namespace: snapNamespace, Name: name}, vmi))
	opts := guestagent.Options{CallTimeout: 30 * time.Second}
	ac := c.Node(vmi.Status.NodeName).Hypervisor.(hypervisor.AgentCommander)
	return guest{c: guestagent.New(guestagent.NewPassthroughTransport(ac, domain.DomainName(vmi), opts), opts)}
}

// guestWrite writes path (holding its own name) in the guest and syncs it
// to the disk.
func guestWrite(ctx context.Context, t *testing.T, g guest, path string) {
	t.Helper()
	r, err := g.exec(ctx, "/bin/sh", "-c", "echo "+path+" > "+path+" && sync")
	require.NoError(t, err)
	require.Equal(t, 0, r.Code, "write %s: %s", path, r.Stderr)
}

// requireMAC checks that the guest has a NIC with the MAC want and, when
// not is set, none with not.
func requireMAC(ctx context.Context, t *testing.T, g guest, want, not string) {
	t.Helper()
	ifaces, err := g.c.NetworkInterfaces(ctx)
	require.NoError(t, err)
	var macs []string
	for _, i := range ifaces {
		macs = append(macs, strings.ToLower(i.HardwareAddress))
	}
	assert.Contains(t, macs, strings.ToLower(want), "the guest's NICs")
	if not != "" {
		assert.NotContains(t, macs, strings.ToLower(not), "the guest's NICs")
	}
}

// productUUID is the firmware (SMBIOS system) UUID the guest sees.
func productUUID(ctx context.Context, t *testing.T, g guest) string {
	t.Helper()
	b, err := g.readFile(ctx, "/sys/class/dmi/id/product_uuid")
	require.NoError(t, err)
	return strings.ToLower(strings.TrimSpace(string(b)))
}

func waitSnapshot(ctx context.Context, t *testing.T, c *cluster.Cluster, name string) *virtkit.VirtualMachineSnapshot {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, snapTimeout)
	defer cancel()
	got, err := cluster.WaitFor(wctx, c.Store(), store.Key{Namespace: snapNamespace, Name: name},
		func() *virtkit.VirtualMachineSnapshot { return &virtkit.VirtualMachineSnapshot{} }, &virtkit.VirtualMachineSnapshotList{},
		func(s *virtkit.VirtualMachineSnapshot, found bool) bool {
			return found && s.Status != nil && (s.Status.Phase == virtkit.SnapshotSucceeded || s.Status.Phase == virtkit.SnapshotFailed)
		})
	if err != nil {
		cur := &virtkit.VirtualMachineSnapshot{}
		if gerr := c.Store().Get(context.Background(), store.Key{Namespace: snapNamespace, Name: name}, cur); gerr == nil && cur.Status != nil {
			t.Logf("snapshot status: %+v; error: %+v", cur.Status, cur.Status.Error)
		}
	}
	require.NoError(t, err)
	require.Equal(t, virtkit.SnapshotSucceeded, got.Status.Phase, "error: %+v", got.Status.Error)
	require.NotNil(t, got.Status.ReadyToUse)
	assert.True(t, *got.Status.ReadyToUse)
	return got
}

func waitRestore(ctx context.Context, t *testing.T, c *cluster.Cluster, name string) *virtkit.VirtualMachineRestore {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, snapTimeout)
	defer cancel()
	got, err := cluster.WaitFor(wctx, c.Store(), store.Key{Namespace: snapNamespace, Name: name},
		func() *virtkit.VirtualMachineRestore { return &virtkit.VirtualMachineRestore{} }, &virtkit.VirtualMachineRestoreList{},
		func(r *virtkit.VirtualMachineRestore, found bool) bool {
			return found && r.Status != nil && r.Status.Complete != nil && *r.Status.Complete
		})
	if err != nil {
		cur := &virtkit.VirtualMachineRestore{}
		if gerr := c.Store().Get(context.Background(), store.Key{Namespace: snapNamespace, Name: name}, cur); gerr == nil {
			t.Logf("restore %s status: %+v", name, cur.Status)
		}
	}
	require.NoError(t, err, "restore %s completes", name)
	return got
}

func waitClone(ctx context.Context, t *testing.T, c *cluster.Cluster, name string) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, snapTimeout)
	defer cancel()
	got, err := cluster.WaitFor(wctx, c.Store(), store.Key{Namespace: snapNamespace, Name: name},
		func() *virtkit.VirtualMachineClone { return &virtkit.VirtualMachineClone{} }, &virtkit.VirtualMachineCloneList{},
		func(cl *virtkit.VirtualMachineClone, found bool) bool {
			return found && (cl.Status.Phase == virtkit.CloneSucceeded || cl.Status.Phase == virtkit.CloneFailed)
		})
	require.NoError(t, err, "clone %s ends", name)
	require.Equal(t, virtkit.CloneSucceeded, got.Status.Phase, "clone status: %+v", got.Status)
}

// dumpVMI logs what explains a VMI that did not boot: its status and the
// events about it.
func dumpVMI(t *testing.T, c *cluster.Cluster, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	vmi := &virtkit.VirtualMachineInstance{}
	if err := c.Store().Get(ctx, store.Key{Namespace: snapNamespace, Name: name}, vmi); err == nil {
		t.Logf("VMI %s: phase %s, reason %q, conditions %+v", name, vmi.Status.Phase, vmi.Status.Reason, vmi.Status.Conditions)
	}
	var events virtkit.EventList
	if err := c.Store().List(ctx, &events, store.ListOptions{Namespace: snapNamespace}); err == nil {
		for _, e := range events.Items {
			if e.Regarding.Name == name {
				t.Logf("event %s %s: %s", e.Regarding.Kind, e.Reason, e.Note)
			}
		}
	}
}
