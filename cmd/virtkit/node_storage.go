package main

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit/cdi"
	"github.com/virtkit/virtkit/cdi/importer"
	"github.com/virtkit/virtkit/cdi/oci"
	"github.com/virtkit/virtkit/cdi/storage"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/node"
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
}

func (s *nodeStorageFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&s.dir, "storage-dir", "", "working directory: node-local DataVolumes (dv/), image cache (oci/), scratch (default "+domain.DefaultWorkDir+")")
	fs.StringVar(&s.sharedDir, "shared-storage-dir", "", "directory every node mounts at the same path: storage class \"shared\" (ReadWriteMany); empty offers none")
	fs.BoolVar(&s.pullContainerDisks, "pull-container-disks", false, "pull containerDisk images from their registries (else look for pre-placed images under the storage dir)")
	fs.StringVar(&s.secretsDir, "pull-secrets-dir", "", "directory of imagePullSecrets: <namespace>/<name>/.dockerconfigjson")
	fs.StringSliceVar(&s.allowedNetworks, "import-allowed-networks", nil,
		"CIDRs imports and registry pulls may reach although refused by default (loopback, link-local and the metadata address, the node's own addresses), e.g. a mirror on 127.0.0.1/32")
}

// setUp builds the node's import worker (a controller to run next to the
// agent) and puts the DataVolume resolver in front of the agent's volume
// resolver.
func (s *nodeStorageFlags) setUp(nodeName string, st store.Store, rec controller.EventRecorder, log *slog.Logger, opts *node.Options) (*controller.Controller, error) {
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
	im, err := importer.New(importer.Options{ScratchDir: filepath.Join(dir, "scratch"), Puller: puller, AllowedNetworks: allowed, Logger: log})
	if err != nil {
		return nil, err
	}
	w, err := importer.NewWorker(importer.WorkerOptions{NodeName: nodeName, Store: st, Importer: im, Classes: classes, Logger: log, Events: rec})
	if err != nil {
		return nil, err
	}
	ctrl, err := controller.New(st, w, controller.Options{Name: "importer", Logger: log}, w.Watches()...)
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
func runImporter(ctx context.Context, ctrl *controller.Controller, log *slog.Logger) {
	if err := ctrl.Start(ctx); err != nil && ctx.Err() == nil {
		log.Error("import worker stopped", "err", err)
	}
}
