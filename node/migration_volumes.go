package node

// Volume migration, source side: when the VMI's status.migratedVolumes
// lists volumes, the migration copies those disks to their destination
// claims. The destination XML points each such disk at the destination
// claim's storage on the target, and the migration copies exactly those
// disks (hypervisor.MigrationParams.CopyDisks); every other disk stays
// shared storage both hosts see. A destination claim may be on the
// target's local storage (the migration was placed on its node): the
// source names that file in the destination XML and the copy, running
// over the migration link, writes it there.

import (
	"context"
	"errors"
	"fmt"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/store"
)

// userAliasPrefix is the prefix of the alias the domain builder gives a
// VMI volume's disk (KubeVirt's "ua-" user aliases).
const userAliasPrefix = "ua-"

// migrateVolumes returns the destination XML (dest, or the source's when
// dest is empty) with the disks of vmi's migrated volumes on their
// destination claims, and the target devices of those disks. A VMI
// without migrated volumes gets dest and no disk.
func (a *Agent) migrateVolumes(ctx context.Context, vmi *virtkit.VirtualMachineInstance, domName, dest string) (string, []string, error) {
	if len(vmi.Status.MigratedVolumes) == 0 {
		return dest, nil, nil
	}
	if dest == "" {
		x, err := a.migrationSourceXML(ctx, domName)
		if err != nil {
			return "", nil, fmt.Errorf("source domain XML: %w", err)
		}
		dest = x
	}
	sources := map[string]domain.HostVolume{}
	for i, mv := range vmi.Status.MigratedVolumes {
		field := fmt.Sprintf("status.migratedVolumes[%d]", i)
		if mv.DestinationPVCInfo == nil || mv.DestinationPVCInfo.ClaimName == "" {
			return "", nil, fmt.Errorf("%s.destinationPVCInfo.claimName: required", field)
		}
		req := domain.VolumeRequest{
			Namespace: vmi.Namespace, VMIName: vmi.Name, UID: string(vmi.UID), Volume: mv.VolumeName,
			Kind: domain.VolumePersistentVolumeClaim, ClaimName: mv.DestinationPVCInfo.ClaimName,
		}
		if ms := vmi.Status.MigrationState; ms != nil {
			// The target opens the destination: a claim on node-local
			// storage is the target's file, which the copy writes.
			req.Node = ms.TargetNode
		}
		for j, v := range vmi.Spec.Volumes {
			if v.Name == mv.VolumeName {
				req.Index = j
			}
		}
		// A DataVolume's claim has the DataVolume's name; the resolver
		// keeps DataVolumes apart from plain claims.
		dv := &virtkit.DataVolume{}
		switch err := a.opts.Store.Get(ctx, store.Key{Namespace: vmi.Namespace, Name: req.ClaimName}, dv); {
		case err == nil:
			req.Kind = domain.VolumeDataVolume
		case !errors.Is(err, store.ErrNotFound):
			return "", nil, err
		}
		hv, err := a.opts.Domain.VolumeResolver.ResolveVolume(ctx, req)
		if err != nil {
			return "", nil, fmt.Errorf("%s: destination claim %s: %w", field, req.ClaimName, err)
		}
		sources[mv.VolumeName] = hv
	}
	return retargetDisks(dest, sources)
}

// retargetDisks points the disk of each volume in sources (found by its
// user alias) at the volume's new host source, and returns the XML and
// those disks' target devices in the order of the domain's disks.
func retargetDisks(domainXML string, sources map[string]domain.HostVolume) (string, []string, error) {
	dom := &libvirtxml.Domain{}
	if err := dom.Unmarshal(domainXML); err != nil {
		return "", nil, fmt.Errorf("domain XML: %w", err)
	}
	var targets []string
	found := map[string]bool{}
	if dom.Devices != nil {
		for i := range dom.Devices.Disks {
			d := &dom.Devices.Disks[i]
			if d.Alias == nil || len(d.Alias.Name) <= len(userAliasPrefix) || d.Alias.Name[:len(userAliasPrefix)] != userAliasPrefix {
				continue
			}
			vol := d.Alias.Name[len(userAliasPrefix):]
			hv, ok := sources[vol]
			if !ok {
				continue
			}
			if d.Target == nil || d.Target.Dev == "" {
				return "", nil, fmt.Errorf("disk of volume %s: no target device", vol)
			}
			if d.Source != nil && d.Source.Network != nil {
				return "", nil, fmt.Errorf("disk of volume %s: a network disk cannot be copied", vol)
			}
			src := &libvirtxml.DomainDiskSource{}
			if d.Source != nil {
				src.Index = d.Source.Index
			}
			if hv.Type == domain.SourceBlock {
				src.Block = &libvirtxml.DomainDiskSourceBlock{Dev: hv.Path}
			} else {
				src.File = &libvirtxml.DomainDiskSourceFile{File: hv.Path}
			}
			d.Source = src
			d.BackingStore = nil
			if d.Driver != nil && hv.Format != "" {
				d.Driver.Type = hv.Format
			}
			targets = append(targets, d.Target.Dev)
			found[vol] = true
		}
	}
	for vol := range sources {
		if !found[vol] {
			return "", nil, fmt.Errorf("volume %s: the domain has no disk for it", vol)
		}
	}
	x, err := dom.Marshal()
	if err != nil {
		return "", nil, fmt.Errorf("domain XML: %w", err)
	}
	return x, targets, nil
}
