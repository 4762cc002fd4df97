package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit/cdi"
	"github.com/virtkit/virtkit/cdi/importer"
	"github.com/virtkit/virtkit/cdi/oci"
	"github.com/virtkit/virtkit/cdi/storage"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/events"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// nodeStorageFlags configure a node's DataVolume import worker and
// registry pulls.
type nodeStorageFlags struct {
	dir                string
	sharedDir          string
	secretsDir         string
	pullContainerDisks bool
	allowedNetworks    []string
	qemuImgSandbox     string
	allowUnconfined    bool
}

func (s *nodeStorageFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&s.dir, "storage-dir", "", "working directory: node-local DataVolumes (dv/), image cache (oci/), scratch (default "+domain.DefaultWorkDir+")")
	fs.StringVar(&s.sharedDir, "shared-storage-dir", "", "directory every node mounts at the same path: storage class \"shared\" (ReadWriteMany); empty offers none")
	fs.BoolVar(&s.pullContainerDisks, "pull-container-disks", false, "pull containerDisk images from their registries (else look for pre-placed images under the storage dir)")
	fs.StringVar(&s.secretsDir, "pull-secrets-dir", "", "directory of imagePullSecrets: <namespace>/<name>/.dockerconfigjson")
	fs.StringSliceVar(&s.allowedNetworks, "import-allowed-networks", nil,
		"CIDRs imports and registry pulls may reach although refused by default (loopback, link-local and the metadata address, the node's own addresses), e.g. a mirror on 127.0.0.1/32")
	fs.StringVar(&s.qemuImgSandbox, "qemu-img-sandbox", string(importer.SandboxBwrap),
		"how qemu-img, which reads tenants' images, is confined: bwrap (bubblewrap: it sees only the files of one import; the node refuses to start without bwrap) or none (unconfined: it can open any file the node can; needs --allow-unconfined-qemu-img)")
	fs.BoolVar(&s.allowUnconfined, "allow-unconfined-qemu-img", false,
		"accept --qemu-img-sandbox none (unsafe with hostile tenants: a crafted image that slips past the importer's header checks could make qemu-img read host files)")
}

// qemuImg is the importer's qemu-img from --qemu-img-sandbox and
// --allow-unconfined-qemu-img.
func (s *nodeStorageFlags) qemuImg(log *slog.Logger) (importer.QemuImg, error) {
	switch importer.Sandbox(s.qemuImgSandbox) {
	case importer.SandboxBwrap:
		return importer.QemuImg{Sandbox: importer.SandboxBwrap}, nil
	case importer.SandboxNone:
		if !s.allowUnconfined {
			return importer.QemuImg{}, errors.New("--qemu-img-sandbox none: qemu-img would read tenants' images unconfined; pass --allow-unconfined-qemu-img to accept that, or install bubblewrap and keep bwrap")
		}
		log.Warn("qemu-img sandbox off (--qemu-img-sandbox none --allow-unconfined-qemu-img): imports run qemu-img unconfined, able to open any file this node can")
		return importer.QemuImg{Sandbox: importer.SandboxNone}, nil
	}
	return importer.QemuImg{}, fmt.Errorf("--qemu-img-sandbox: %q is not bwrap or none", s.qemuImgSandbox)
}

// setUp builds the node's import worker (a controller to run next to the
// agent) and puts the DataVolume resolver in front of the agent's volume
// resolver.
func (s *nodeStorageFlags) setUp(nodeName string, st store.Store, rec events.EventRecorder, log *slog.Logger, opts *node.Options) (*reconcile.Controller, error) {
	dir := s.dir
	if dir == "" {
		dir = domain.DefaultWorkDir
	}
	classes := storage.Classes{List: []storage.Class{storage.Local{Dir: func(string) string { return dir }}}}
	if s.sharedDir != "" {
		classes.List = append(classes.List, storage.SharedDir{Dir: s.sharedDir})
	}
	allowed, err := parsePrefixes("--import-allowed-networks", s.allowedNetworks)
	if err != nil {
		return nil, err
	}
	puller, err := oci.New(oci.Options{CacheDir: filepath.Join(dir, "oci"), AllowedNetworks: allowed, Logger: log})
	if err != nil {
		return nil, err
	}
	qi, err := s.qemuImg(log)
	if err != nil {
		return nil, err
	}
	im, err := importer.New(importer.Options{ScratchDir: filepath.Join(dir, "scratch"), Puller: puller, AllowedNetworks: allowed,
		QemuImg: qi, Logger: log})
	if errors.Is(err, importer.ErrNoSandbox) {
		return nil, fmt.Errorf("--qemu-img-sandbox %s: %w (install bubblewrap, or pass --qemu-img-sandbox none --allow-unconfined-qemu-img)", s.qemuImgSandbox, err)
	}
	if err != nil {
		return nil, err
	}
	w, err := importer.NewWorker(importer.WorkerOptions{NodeName: nodeName, Store: st, Importer: im, Classes: classes, Logger: log, Events: rec})
	if err != nil {
		return nil, err
	}
	ctrl, err := reconcile.New(st, w, reconcile.Options{Name: "importer", Logger: log}, w.Watches()...)
	if err != nil {
		return nil, err
	}
	r := &cdi.Resolver{Base: &domain.DirResolver{Dir: dir, Create: s.pullContainerDisks}, Node: nodeName, Store: st, Classes: classes}
	if s.pullContainerDisks {
		r.Puller = puller
	}
	if s.secretsDir != "" {
		r.Secrets = oci.SecretDir(s.secretsDir)
	}
	opts.Domain.VolumeResolver = r
	return ctrl, nil
}

// runImporter runs the import worker until ctx ends.
func runImporter(ctx context.Context, ctrl *reconcile.Controller, log *slog.Logger) {
	if err := ctrl.Start(ctx); err != nil && ctx.Err() == nil {
		log.Error("import worker stopped", "err", err)
	}
}
