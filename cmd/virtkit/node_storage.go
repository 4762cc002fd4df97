package main

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit/cdi/importer"
	"github.com/virtkit/virtkit/cdi/oci"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/domain"
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

// options parses the storage flags into the node process's storage
// options.
func (s *nodeStorageFlags) options(log *slog.Logger) (cluster.NodeStorageOptions, error) {
	allowed, err := parsePrefixes("--import-allowed-networks", s.allowedNetworks)
	if err != nil {
		return cluster.NodeStorageOptions{}, err
	}
	qi, err := s.qemuImg(log)
	if err != nil {
		return cluster.NodeStorageOptions{}, err
	}
	o := cluster.NodeStorageOptions{Dir: s.dir, SharedDir: s.sharedDir, PullContainerDisks: s.pullContainerDisks,
		AllowedNetworks: allowed, QemuImg: qi}
	if s.secretsDir != "" {
		o.Secrets = oci.SecretDir(s.secretsDir)
	}
	return o, nil
}

// explain adds the way out to the node process's error when qemu-img
// cannot be confined.
func (s *nodeStorageFlags) explain(err error) error {
	if errors.Is(err, importer.ErrNoSandbox) {
		return fmt.Errorf("--qemu-img-sandbox %s: %w (install bubblewrap, or pass --qemu-img-sandbox none --allow-unconfined-qemu-img)", s.qemuImgSandbox, err)
	}
	return err
}
