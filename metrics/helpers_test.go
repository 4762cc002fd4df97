package metrics

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/migration"
	"github.com/virtkit/virtkit/store"
)

// fakeObjects is an ObjectLister over fixed slices, so tests control every
// timestamp (a real store stamps creation times itself).
type fakeObjects struct {
	mu   sync.Mutex
	vmis []virtkit.VirtualMachineInstance
	vms  []virtkit.VirtualMachine
	migs []virtkit.VirtualMachineInstanceMigration
	// snaps, restores and dvs are served when set; nil lists are an
	// unknown kind, as for a store without them.
	snaps    []virtkit.VirtualMachineSnapshot
	restores []virtkit.VirtualMachineRestore
	dvs      []virtkit.DataVolume
	err      error
	// lastOpts are the options of the latest List (selectors are not
	// applied).
	lastOpts store.ListOptions
}

func (f *fakeObjects) List(_ context.Context, list virtkit.ObjectList, opts store.ListOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastOpts = opts
	if f.err != nil {
		return f.err
	}
	switch l := list.(type) {
	case *virtkit.VirtualMachineInstanceList:
		l.Items = append([]virtkit.VirtualMachineInstance(nil), f.vmis...)
	case *virtkit.VirtualMachineList:
		l.Items = append([]virtkit.VirtualMachine(nil), f.vms...)
	case *virtkit.VirtualMachineInstanceMigrationList:
		l.Items = append([]virtkit.VirtualMachineInstanceMigration(nil), f.migs...)
	case *virtkit.VirtualMachineSnapshotList:
		if f.snaps == nil {
			return fmt.Errorf("fakeObjects: %T: %w", list, store.ErrUnknownKind)
		}
		l.Items = append([]virtkit.VirtualMachineSnapshot(nil), f.snaps...)
	case *virtkit.VirtualMachineRestoreList:
		if f.restores == nil {
			return fmt.Errorf("fakeObjects: %T: %w", list, store.ErrUnknownKind)
		}
		l.Items = append([]virtkit.VirtualMachineRestore(nil), f.restores...)
	case *virtkit.DataVolumeList:
		if f.dvs == nil {
			return fmt.Errorf("fakeObjects: %T: %w", list, store.ErrUnknownKind)
		}
		l.Items = append([]virtkit.DataVolume(nil), f.dvs...)
	default:
		return fmt.Errorf("fakeObjects: %T: %w", list, store.ErrUnknownKind)
	}
	return nil
}

func (f *fakeObjects) set(fn func(*fakeObjects)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// fakeDomains is a DomainStatser with fixed answers per domain.
type fakeDomains struct {
	stats map[string]hypervisor.DomainStats
	errs  map[string]error
	// block, when set, makes Stats of these domains wait for release,
	// ignoring ctx: a stuck QEMU.
	block   map[string]bool
	release chan struct{}
	delay   map[string]time.Duration
	// xml is each domain's live XML; xmlCalls counts reads.
	xml      map[string]string
	xmlCalls atomic.Int32
}

func (f *fakeDomains) XML(_ context.Context, name string) (string, error) {
	f.xmlCalls.Add(1)
	x, ok := f.xml[name]
	if !ok {
		return "", fmt.Errorf("domain %s: %w", name, hypervisor.ErrNotFound)
	}
	return x, nil
}

func (f *fakeDomains) Stats(_ context.Context, name string) (hypervisor.DomainStats, error) {
	if f.block[name] {
		<-f.release
	}
	if d := f.delay[name]; d > 0 {
		// Ignores ctx and returns late, while the scrape goes on.
		time.Sleep(d)
	}
	if err := f.errs[name]; err != nil {
		return hypervisor.DomainStats{}, err
	}
	st, ok := f.stats[name]
	if !ok {
		return hypervisor.DomainStats{}, fmt.Errorf("domain %s: %w", name, hypervisor.ErrNotFound)
	}
	return st, nil
}

// fakeHost adds vCPU pinning and machine types to fakeDomains.
type fakeHost struct {
	*fakeDomains
	cpus     int
	machines []hypervisor.MachineType
	// mem is the host memory; nil reports it as not supported.
	mem    *hypervisor.NodeMemory
	memErr error
}

func (h *fakeHost) NodeMemory(ctx context.Context) (hypervisor.NodeMemory, error) {
	if h.memErr != nil {
		return hypervisor.NodeMemory{}, h.memErr
	}
	if h.mem == nil {
		return hypervisor.NodeMemory{}, hypervisor.NotSupportedError("node memory", "fake host")
	}
	return *h.mem, ctx.Err()
}

func (h *fakeHost) VCPUAffinity(_ context.Context, name string) ([][]bool, error) {
	st, ok := h.stats[name]
	if !ok {
		return nil, fmt.Errorf("domain %s: %w", name, hypervisor.ErrNotFound)
	}
	out := make([][]bool, len(st.VCPUs))
	for v := range out {
		out[v] = make([]bool, h.cpus)
		out[v][v%h.cpus] = true // pinned: one host CPU each
	}
	return out, nil
}

func (h *fakeHost) MachineTypes(context.Context) ([]hypervisor.MachineType, error) {
	return h.machines, nil
}

type fakeGuest map[string][]GuestFilesystem

func (g fakeGuest) FilesystemList(namespace, name string) ([]GuestFilesystem, error) {
	fs, ok := g[DomainName(namespace, name)]
	if !ok {
		return nil, fmt.Errorf("vmi %s/%s: %w", namespace, name, errNoGuestInfo)
	}
	return fs, nil
}

type fakeMigrations []Migration

func (m fakeMigrations) Migrations() []Migration { return m }

type fakeJob hypervisor.JobStats

func (j fakeJob) Stats(context.Context) (hypervisor.JobStats, error) {
	return hypervisor.JobStats(j), nil
}

type fakeEngine migration.Snapshot

func (e fakeEngine) Snapshot() migration.Snapshot { return migration.Snapshot(e) }

type fakeController ControllerStats

func (c fakeController) Stats() ControllerStats { return ControllerStats(c) }

var errNoGuestInfo = errors.New("no guest information")

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func mt(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }

func runningVMI(ns, name, nodeName string, labels map[string]string) virtkit.VirtualMachineInstance {
	vmi := virtkit.VirtualMachineInstance{}
	vmi.Namespace, vmi.Name, vmi.UID = ns, name, types.UID(ns+"-"+name)
	vmi.Labels = labels
	vmi.CreationTimestamp = mt(0)
	vmi.Status.NodeName = nodeName
	vmi.Status.Phase = virtkit.Running
	return vmi
}
