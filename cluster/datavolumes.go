package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"sync"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cdi"
	"github.com/virtkit/virtkit/cdi/importer"
	"github.com/virtkit/virtkit/cdi/oci"
	"github.com/virtkit/virtkit/cdi/storage"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// Controller names of the DataVolume machinery.
const (
	DataVolumeController         = "datavolume"
	DataVolumeTemplateController = "datavolumetemplate"
)

// StorageOptions configure DataVolumes: where disks live and how they are
// imported. The zero value works: node-local volumes and a shared class in
// a temporary directory, made by the first import and removed when Start
// returns.
type StorageOptions struct {
	// Dir holds each node's local volumes (Dir/<node>/dv/...), the shared
	// class (Dir/shared/dv/...) and scratch space; empty is a temporary
	// directory.
	Dir string
	// Puller pulls registry sources (and containerDisks when
	// PullContainerDisks is set); nil is a puller caching under Dir/oci.
	Puller *oci.Puller
	// PullContainerDisks makes the nodes pull containerDisk images from
	// their registries instead of looking for pre-placed image files.
	PullContainerDisks bool
	// Secrets finds imagePullSecrets for containerDisks.
	Secrets oci.Secrets
	// ImportRetries is how many attempts a transient import failure gets
	// (importer.WorkerOptions.MaxRetries).
	ImportRetries int32
	// AllowedNetworks are networks imports and pulls may reach although
	// the address policy refuses them by default (loopback, link-local,
	// the metadata address, the node's own addresses): an in-cluster
	// mirror on loopback, tests (importer.Options.AllowedNetworks). It
	// does not apply to a Puller given here, which has its own.
	AllowedNetworks []netip.Prefix
}

// storageSetup is what New built for DataVolumes.
type storageSetup struct {
	dir     string
	tempDir bool
	classes func(nodeName string) storage.Classes
	puller  *oci.Puller
	// workers are the import workers of this process's nodes, by node
	// name (uploads go to the worker of the volume's node).
	workers sync.Map
}

func (c *Cluster) setUpStorage() error {
	so := c.opts.Storage
	s := &storageSetup{dir: so.Dir}
	if s.dir == "" {
		// Named now, made by the first import (most clusters import
		// nothing), removed when Start returns.
		s.dir = filepath.Join(os.TempDir(), fmt.Sprintf("virtkit-volumes-%d-%016x", os.Getpid(), rand.Uint64()))
		s.tempDir = true
	}
	s.classes = func(string) storage.Classes {
		return storage.Classes{List: []storage.Class{
			storage.Local{Dir: func(n string) string { return filepath.Join(s.dir, storage.Sanitize(n)) }},
			storage.SharedDir{Dir: filepath.Join(s.dir, "shared")},
		}}
	}
	s.puller = so.Puller
	if s.puller == nil {
		p, err := oci.New(oci.Options{CacheDir: filepath.Join(s.dir, "oci"), AllowedNetworks: so.AllowedNetworks, Logger: c.opts.Logger})
		if err != nil {
			return err
		}
		s.puller = p
	}
	c.storage = s
	rc := controller.ReconcilerOptions{Store: c.opts.Store, Clock: c.opts.Clock, Logger: c.opts.Logger,
		Events: c.controllerEvents, Defaults: c.opts.Defaults}
	dvr, err := controller.NewDataVolumeReconciler(rc)
	if err != nil {
		return err
	}
	if err := c.addController(Controller{Name: DataVolumeController, Reconciler: dvr, Watches: dvr.Watches()}); err != nil {
		return err
	}
	if err := c.setUpSnapshots(rc); err != nil {
		return err
	}
	if err := c.setUpExport(rc); err != nil {
		return err
	}
	tr := cdi.NewTemplateReconciler(cdi.TemplateOptions{Store: c.opts.Store, Logger: c.opts.Logger})
	return c.addController(Controller{Name: DataVolumeTemplateController, Reconciler: tr, Watches: []reconcile.Watch{
		{NewList: func() virtkit.ObjectList { return &virtkit.VirtualMachineList{} }, Map: vmsWithTemplates},
		{NewList: func() virtkit.ObjectList { return &virtkit.DataVolumeList{} }, Map: reconcile.ControllerOwner(virtkit.KindVirtualMachine)},
	}})
}

// setUpNodeStorage starts a node's import worker and puts the DataVolume
// resolver in front of its volume resolver (a DirResolver, the default),
// after Options.ConfigureNode had its say.
func (c *Cluster) setUpNodeStorage(name string, no *node.Options) error {
	s := c.storage
	im, err := importer.New(importer.Options{ScratchDir: filepath.Join(s.dir, "scratch", storage.Sanitize(name)), Puller: s.puller,
		AllowedNetworks: c.opts.Storage.AllowedNetworks, Logger: c.opts.Logger})
	if err != nil {
		return err
	}
	w, err := importer.NewWorker(importer.WorkerOptions{NodeName: name, Store: c.opts.Store, Importer: im, Classes: s.classes(name),
		MaxRetries: c.opts.Storage.ImportRetries, Clock: c.opts.Clock, Logger: c.opts.Logger, Events: c.controllerEvents})
	if err != nil {
		return err
	}
	if err := c.addController(Controller{Name: "importer-" + name, Reconciler: w, Watches: w.Watches()}); err != nil {
		return err
	}
	s.workers.Store(name, w)
	useDataVolumes(no, c.opts.Store, s.classes(name), s.puller, c.opts.Storage.PullContainerDisks, c.opts.Storage.Secrets)
	return nil
}

// useDataVolumes puts the DataVolume resolver (package cdi) in front of a
// node agent's volume resolver, a DirResolver (the default), and makes it
// the kernel resolver unless the agent has one; a caller's own volume
// resolver is left alone. puller pulls containerDisks when pull is set.
func useDataVolumes(no *node.Options, st store.Store, classes storage.Classes, puller *oci.Puller, pull bool, secrets oci.Secrets) {
	base, ok := no.Domain.VolumeResolver.(*domain.DirResolver)
	if no.Domain.VolumeResolver == nil {
		base, ok = &domain.DirResolver{}, true
	}
	if !ok {
		return
	}
	r := &cdi.Resolver{Base: base, Node: no.NodeName, Store: st, Classes: classes, Secrets: secrets}
	if pull {
		r.Puller = puller
	}
	no.Domain.VolumeResolver = r
	if no.Domain.KernelResolver == nil {
		no.Domain.KernelResolver = r
	}
}

// vmsWithTemplates enqueues only VMs that have dataVolumeTemplates (a
// deleted VM's last state still names them), so VMs without any cost the
// template controller nothing.
func vmsWithTemplates(ctx context.Context, obj virtkit.Object) []reconcile.Request {
	if vm, ok := obj.(*virtkit.VirtualMachine); ok && len(vm.Spec.DataVolumeTemplates) == 0 {
		return nil
	}
	return reconcile.ObjectKey(ctx, obj)
}

func (c *Cluster) cleanUpStorage() {
	if c.storage != nil && c.storage.tempDir {
		_ = os.RemoveAll(c.storage.dir)
	}
}
