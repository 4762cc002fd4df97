package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"

	"github.com/virtkit/virtkit/cdi/importer"
	"github.com/virtkit/virtkit/cdi/oci"
	"github.com/virtkit/virtkit/cdi/storage"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/reconcile"
)

// NodeStorageOptions configure the DataVolumes of a node process: its
// import worker, registry pulls and where volumes live. The zero value
// keeps node-local volumes under domain.DefaultWorkDir with no shared
// class, qemu-img confined when bubblewrap is found.
type NodeStorageOptions struct {
	// Dir holds the node-local volumes (dv/), the image cache (oci/) and
	// scratch space; empty is domain.DefaultWorkDir.
	Dir string
	// SharedDir, when set, is a directory every node mounts at the same
	// path: storage class "shared" (ReadWriteMany).
	SharedDir string
	// PullContainerDisks makes the node pull containerDisk images from
	// their registries instead of looking for pre-placed image files under
	// Dir.
	PullContainerDisks bool
	// Secrets finds imagePullSecrets for containerDisks.
	Secrets oci.Secrets
	// AllowedNetworks are networks imports and pulls may reach although
	// the address policy refuses them by default.
	AllowedNetworks []netip.Prefix
	// QemuImg runs qemu-img for imports; its zero value confines it with
	// bubblewrap when bwrap is found.
	QemuImg importer.QemuImg
	// ImportRetries is how many attempts a transient import failure gets.
	ImportRetries int32
}

// setUp builds a node's import worker (returned with its controller; it
// also takes the uploads forwarded to the node), recording through the
// agent's recorder, and puts the DataVolume resolver in front of the
// agent's volume resolver (a DirResolver on Dir by default).
func (s NodeStorageOptions) setUp(no *node.Options, log *slog.Logger) (*reconcile.Controller, *importer.Worker, error) {
	dir := s.Dir
	if dir == "" {
		dir = domain.DefaultWorkDir
	}
	classes := storage.Classes{List: []storage.Class{storage.Local{Dir: func(string) string { return dir }}}}
	if s.SharedDir != "" {
		classes.List = append(classes.List, storage.SharedDir{Dir: s.SharedDir})
	}
	puller, err := oci.New(oci.Options{CacheDir: filepath.Join(dir, "oci"), AllowedNetworks: s.AllowedNetworks, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	im, err := importer.New(importer.Options{ScratchDir: filepath.Join(dir, "scratch"), Puller: puller, AllowedNetworks: s.AllowedNetworks,
		QemuImg: s.QemuImg, Logger: log})
	if errors.Is(err, importer.ErrNoSandbox) {
		return nil, nil, fmt.Errorf("Storage.QemuImg.Sandbox %s: %w", s.QemuImg.Sandbox, err)
	}
	if err != nil {
		return nil, nil, err
	}
	w, err := importer.NewWorker(importer.WorkerOptions{NodeName: no.NodeName, Store: no.Store, Importer: im, Classes: classes,
		MaxRetries: s.ImportRetries, Clock: no.Clock, Logger: log, Events: no.Events})
	if err != nil {
		return nil, nil, err
	}
	ctrl, err := reconcile.New(no.Store, w, reconcile.Options{Name: "importer", Clock: no.Clock, Logger: log}, w.Watches()...)
	if err != nil {
		return nil, nil, err
	}
	if no.Domain.VolumeResolver == nil {
		no.Domain.VolumeResolver = &domain.DirResolver{Dir: dir, Create: s.PullContainerDisks}
	}
	useDataVolumes(no, no.Store, classes, puller, s.PullContainerDisks, s.Secrets)
	return ctrl, w, nil
}
