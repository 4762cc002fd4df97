package cdi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"golang.org/x/sync/singleflight"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cdi/oci"
	"github.com/virtkit/virtkit/cdi/storage"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/store"
)

// Resolver is a node's domain.VolumeResolver and KernelResolver for
// imported disks: dataVolume volumes (and persistentVolumeClaim volumes
// naming a DataVolume's claim) map to their storage class's file, and,
// with a Puller, containerDisk images are pulled from their registry
// (honouring imagePullPolicy and imagePullSecret) and booted through a
// qcow2 overlay. Everything else goes to Base.
type Resolver struct {
	// Base resolves every other volume; its Dir holds overlays.
	Base *domain.DirResolver
	// Node is this node's name (the path of a node-local class).
	Node string
	// Store holds the DataVolumes.
	Store store.Store
	// Classes are the storage classes of this node.
	Classes storage.Classes
	// Puller pulls containerDisk images; nil keeps Base's lookup of
	// pre-placed image files.
	Puller *oci.Puller
	// Secrets finds imagePullSecrets; nil refuses images that name one.
	Secrets oci.Secrets
	// PullTimeout bounds one registry pull (default DefaultPullTimeout). A
	// pull outlives the call that started it: when the caller's context
	// ends first (a node agent's reconcile deadline, say) the pull goes on,
	// and the next call for the same image joins it instead of starting
	// the download over.
	PullTimeout time.Duration

	pulls singleflight.Group
}

// DefaultPullTimeout bounds one registry pull of a Resolver.
const DefaultPullTimeout = 10 * time.Minute

var (
	_ domain.VolumeResolver = (*Resolver)(nil)
	_ domain.KernelResolver = (*Resolver)(nil)
)

// ResolveVolume implements domain.VolumeResolver.
func (r *Resolver) ResolveVolume(ctx context.Context, req domain.VolumeRequest) (domain.HostVolume, error) {
	switch req.Kind {
	case domain.VolumeDataVolume, domain.VolumePersistentVolumeClaim:
		node := r.Node
		if req.Node != "" {
			node = req.Node
		}
		p, ok, remote, err := r.dataVolumePath(ctx, req.Namespace, req.ClaimName, node)
		if err != nil {
			return domain.HostVolume{}, err
		}
		if !ok {
			break
		}
		if remote {
			// Another node's local disk (a volume migration's
			// destination on the target): named, not opened here. An
			// imported DataVolume's file is raw.
			return domain.HostVolume{Type: domain.SourceFile, Path: p, Format: "raw", ReadOnly: req.ReadOnly}, nil
		}
		return r.Base.ResolveVolume(ctx, domain.VolumeRequest{Namespace: req.Namespace, VMIName: req.VMIName, UID: req.UID,
			Volume: req.Volume, Index: req.Index, Field: req.Field, Kind: domain.VolumeHostDisk, Path: p, HostDiskType: "Disk", ReadOnly: req.ReadOnly})
	case domain.VolumeContainerDisk:
		if r.Puller == nil {
			break
		}
		p, err := r.pull(ctx, req.Namespace, req.Image, req.ImagePath, req.ImagePullPolicy, req.ImagePullSecret)
		if err != nil {
			return domain.HostVolume{}, err
		}
		base := *r.Base
		base.Images = map[string]string{req.Image: p}
		req.ImagePath = ""
		return base.ResolveVolume(ctx, req)
	}
	return r.Base.ResolveVolume(ctx, req)
}

// ResolveKernel implements domain.KernelResolver: with a Puller the
// kernel and initrd are pulled from the kernelBoot container image (its
// kernelPath and initrdPath), else Base finds them on the host.
func (r *Resolver) ResolveKernel(ctx context.Context, req domain.KernelRequest) (domain.HostKernel, error) {
	if r.Puller == nil {
		return r.Base.ResolveKernel(ctx, req)
	}
	var k domain.HostKernel
	for _, f := range []struct {
		path string
		dst  *string
	}{{req.KernelPath, &k.Kernel}, {req.InitrdPath, &k.Initrd}} {
		if f.path == "" {
			continue
		}
		p, err := r.pull(ctx, req.Namespace, req.Image, f.path, req.ImagePullPolicy, req.ImagePullSecret)
		if err != nil {
			return domain.HostKernel{}, err
		}
		*f.dst = p
	}
	return k, nil
}

// dataVolumePath returns the disk file of DataVolume namespace/name as
// node sees it; ok is false when no DataVolume has that name (a plain
// claim), remote is true when the file is on another node's local storage.
func (r *Resolver) dataVolumePath(ctx context.Context, namespace, name, node string) (p string, ok, remote bool, err error) {
	dv := &virtkit.DataVolume{}
	err = r.Store.Get(ctx, store.Key{Namespace: namespace, Name: name}, dv)
	if errors.Is(err, store.ErrNotFound) {
		return "", false, false, nil
	}
	if err != nil {
		return "", false, false, err
	}
	if dv.Status.Phase != virtkit.DataVolumeSucceeded {
		return "", false, false, fmt.Errorf("DataVolume %s/%s is in phase %q: %w", namespace, name, dv.Status.Phase, domain.ErrNotResolved)
	}
	class, err := r.Classes.Get(dv.Annotations[virtkit.DataVolumeStorageClassAnnotation])
	if err != nil {
		return "", false, false, fmt.Errorf("DataVolume %s/%s: %w: %w", namespace, name, domain.ErrNotResolved, err)
	}
	n := dv.Annotations[virtkit.DataVolumeVolumeNodeAnnotation]
	if n != "" && n != node {
		if node != r.Node {
			return "", false, false, fmt.Errorf("DataVolume %s/%s lives on node %s, not on node %s: %w", namespace, name, n, node, domain.ErrNotResolved)
		}
		return "", false, false, fmt.Errorf("DataVolume %s/%s lives on node %s: %w", namespace, name, n, domain.ErrNotResolved)
	}
	return class.Path(node, namespace, name), true, n != "" && node != r.Node, nil
}

func (r *Resolver) pull(ctx context.Context, namespace, image, path, policy, secret string) (string, error) {
	timeout := r.PullTimeout
	if timeout <= 0 {
		timeout = DefaultPullTimeout
	}
	key := strings.Join([]string{namespace, image, path, policy, secret}, "\x00")
	ch := r.pulls.DoChan(key, func() (any, error) {
		// Detached from the caller's cancellation (its values stay), bounded
		// by the pull timeout.
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		p, err := r.pullNow(pctx, namespace, image, path, policy, secret)
		if err != nil && pctx.Err() != nil && !errors.Is(err, domain.ErrImagePull) {
			err = pullFailed(fmt.Errorf("%w: %s did not arrive within %v: %w", domain.ErrImagePull, image, timeout, err),
				"image %s did not arrive within %v", image, timeout)
		}
		return p, err
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return "", res.Err
		}
		return res.Val.(string), nil
	case <-ctx.Done():
		return "", fmt.Errorf("pulling %s (goes on in the background): %w", image, ctx.Err())
	}
}

func (r *Resolver) pullNow(ctx context.Context, namespace, image, path, policy, secret string) (string, error) {
	var auth authn.Authenticator
	if secret != "" {
		if r.Secrets == nil {
			err := fmt.Errorf("%w: imagePullSecret %s: this node has no pull secrets", domain.ErrImagePull, secret)
			return "", pullFailed(err, "imagePullSecret %s: this node has no pull secrets", secret)
		}
		cfg, err := r.Secrets.DockerConfig(ctx, namespace, secret)
		if err != nil {
			return "", pullFailed(fmt.Errorf("%w: %w", domain.ErrImagePull, err), "imagePullSecret %s could not be read", secret)
		}
		if auth, err = oci.AuthFor(cfg, image); err != nil {
			msg := oci.TenantMessage(err)
			if msg == "" {
				msg = "not a usable dockerconfigjson"
			}
			return "", pullFailed(fmt.Errorf("%w: imagePullSecret %s: %w", domain.ErrImagePull, secret, err), "imagePullSecret %s: %s", secret, msg)
		}
	}
	res, err := r.Puller.Pull(ctx, oci.Request{Image: image, Path: path, Policy: policy, Auth: auth})
	if err != nil {
		if ctx.Err() != nil {
			return "", err
		}
		msg := oci.TenantMessage(err)
		if msg == "" {
			msg = "image pull failed (the node's log has the details)"
		}
		return "", pullFailed(fmt.Errorf("%w: %w", domain.ErrImagePull, err), "pulling image %s: %s", image, msg)
	}
	return res.Path, nil
}
