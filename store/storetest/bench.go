package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// SampleVMI returns a typical VMI (2 vCPUs, 2Gi, a container disk, a
// cloud-init disk, one masquerade interface, a running status) for
// benchmarks and tests that need realistic object sizes.
func SampleVMI(namespace, name string) *virtkit.VirtualMachineInstance {
	mem := resource.MustParse("2Gi")
	return &virtkit.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: name,
			Labels:      map[string]string{"app": "bench", "kubevirt.io/vm": name},
			Annotations: map[string]string{"kubevirt.io/latest-observed-api-version": "v1"},
		},
		Spec: virtkit.VirtualMachineInstanceSpec{
			Domain: virtkit.DomainSpec{
				CPU:    &virtkit.CPU{Cores: 2, Sockets: 1, Threads: 1},
				Memory: &virtkit.Memory{Guest: &mem},
				Resources: virtkit.ResourceRequirements{Requests: virtkit.ResourceList{
					virtkit.ResourceMemory: mem, virtkit.ResourceCPU: resource.MustParse("2"),
				}},
				Devices: virtkit.Devices{
					Disks: []virtkit.Disk{
						{Name: "root", DiskDevice: virtkit.DiskDevice{Disk: &virtkit.DiskTarget{Bus: "virtio"}}},
						{Name: "cloudinit", DiskDevice: virtkit.DiskDevice{Disk: &virtkit.DiskTarget{Bus: "virtio"}}},
					},
					Interfaces: []virtkit.Interface{{Name: "default", Model: "virtio",
						InterfaceBindingMethod: virtkit.InterfaceBindingMethod{Masquerade: &virtkit.InterfaceMasquerade{}}}},
				},
			},
			Networks: []virtkit.Network{{Name: "default", NetworkSource: virtkit.NetworkSource{Pod: &virtkit.PodNetwork{}}}},
			Volumes: []virtkit.Volume{
				{Name: "root", VolumeSource: virtkit.VolumeSource{ContainerDisk: &virtkit.ContainerDiskSource{Image: "quay.io/containerdisks/fedora:40"}}},
				{Name: "cloudinit", VolumeSource: virtkit.VolumeSource{CloudInitNoCloud: &virtkit.CloudInitNoCloudSource{UserData: "#cloud-config\npassword: fedora\n"}}},
			},
		},
		Status: virtkit.VirtualMachineInstanceStatus{
			Phase:    virtkit.Running,
			NodeName: "node-1",
			Interfaces: []virtkit.VirtualMachineInstanceNetworkInterface{
				{Name: "default", IP: "10.0.2.2", MAC: "52:54:00:12:34:56", InfoSource: "domain, guest-agent"},
			},
		},
	}
}

// BenchOptions sizes Benchmark. Zero values mean 10,000 objects and 100
// watchers.
type BenchOptions struct {
	// Objects is how many VMIs Get, Update and List run over, and how many
	// Create writes into one store before starting a fresh one.
	Objects int
	// Watchers is the fan-out of WatchFanout.
	Watchers int
}

// Benchmark measures a store with VMIs: Create, Get, Update and List over
// opts.Objects objects, Watch (one write seen by one watcher) and
// WatchFanout (one write seen by every one of opts.Watchers watchers).
// newStore must return an empty store; it is called with the *testing.B
// whose cleanups should release the store.
func Benchmark(b *testing.B, newStore func(b *testing.B) store.Store, opts BenchOptions) {
	if opts.Objects == 0 {
		opts.Objects = 10000
	}
	if opts.Watchers == 0 {
		opts.Watchers = 100
	}
	ctx := context.Background()
	const ns = "bench"
	name := func(i int) string { return fmt.Sprintf("vmi-%05d", i) }

	b.Run("Create", func(b *testing.B) {
		var s store.Store
		b.ReportAllocs()
		for i := range b.N {
			if i%opts.Objects == 0 {
				b.StopTimer()
				s = newStore(b)
				b.StartTimer()
			}
			if err := s.Create(ctx, SampleVMI(ns, name(i%opts.Objects))); err != nil {
				b.Fatal(err)
			}
		}
	})

	// Get, Update and List share one store preloaded with opts.Objects VMIs.
	var (
		once   sync.Once
		loaded store.Store
		latest []*virtkit.VirtualMachineInstance
	)
	outer := b // the shared store must outlive each sub-benchmark run's cleanups
	preload := func(b *testing.B) (store.Store, []*virtkit.VirtualMachineInstance) {
		once.Do(func() {
			loaded = newStore(outer)
			latest = make([]*virtkit.VirtualMachineInstance, opts.Objects)
			var wg sync.WaitGroup
			var next atomic.Int64
			for range 8 {
				wg.Go(func() {
					for i := int(next.Add(1) - 1); i < opts.Objects; i = int(next.Add(1) - 1) {
						vmi := SampleVMI(ns, name(i))
						if err := loaded.Create(ctx, vmi); err != nil {
							b.Error(err)
							return
						}
						latest[i] = vmi
					}
				})
			}
			wg.Wait()
		})
		if b.Failed() || loaded == nil {
			b.FailNow()
		}
		return loaded, latest
	}

	b.Run("Get", func(b *testing.B) {
		s, _ := preload(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if err := s.Get(ctx, store.Key{Namespace: ns, Name: name(i % opts.Objects)}, &virtkit.VirtualMachineInstance{}); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("Update", func(b *testing.B) {
		s, vmis := preload(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			vmi := vmis[i%opts.Objects]
			vmi.Spec.Hostname = fmt.Sprint("host-", i)
			if err := s.Update(ctx, vmi); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("List", func(b *testing.B) {
		s, _ := preload(b)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			list := &virtkit.VirtualMachineInstanceList{}
			if err := s.List(ctx, list, store.ListOptions{Namespace: ns}); err != nil {
				b.Fatal(err)
			}
			if len(list.Items) != opts.Objects {
				b.Fatalf("listed %d, want %d", len(list.Items), opts.Objects)
			}
		}
	})

	b.Run("Watch", func(b *testing.B) { benchWatch(b, newStore(b), 1) })
	b.Run(fmt.Sprintf("WatchFanout%d", opts.Watchers), func(b *testing.B) { benchWatch(b, newStore(b), opts.Watchers) })
}

// benchWatch times one Update until every watcher has received its event.
func benchWatch(b *testing.B, s store.Store, watchers int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	vmi := SampleVMI("bench", "watched")
	if err := s.Create(ctx, vmi); err != nil {
		b.Fatal(err)
	}
	var pending sync.WaitGroup
	var done sync.WaitGroup
	for range watchers {
		ch, err := s.Watch(ctx, &virtkit.VirtualMachineInstanceList{}, store.WatchOptions{ResourceVersion: vmi.ResourceVersion})
		if err != nil {
			b.Fatal(err)
		}
		done.Go(func() {
			for ev := range ch {
				if ev.Type == store.Error {
					b.Error(ev.Err)
					return
				}
				pending.Done()
			}
		})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		pending.Add(watchers)
		vmi.Spec.Hostname = fmt.Sprint("host-", i)
		if err := s.Update(ctx, vmi); err != nil {
			b.Fatal(err)
		}
		pending.Wait()
	}
	b.StopTimer()
	cancel()
	done.Wait()
}
