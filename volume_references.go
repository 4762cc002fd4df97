package virtkit

import (
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateObjectName refuses a reference to a namespaced object (claim,
// DataVolume, ConfigMap, Secret, ServiceAccount) whose name no such object
// can have: the node would look it up and build host file names from it.
// An empty name is left to the Required checks.
func validateObjectName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return nil
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

// validateByteSize refuses a disk size the node cannot turn into a number
// of bytes (virtkit.QuantityBytes): not a whole number of bytes, negative,
// or 2^63 bytes and more.
func validateByteSize(q resource.Quantity, p *field.Path) field.ErrorList {
	if _, ok := QuantityBytes(q); ok {
		return nil
	}
	why := "must be a whole number of bytes"
	switch {
	case q.Sign() < 0:
		why = "must not be negative"
	case q.Cmp(*maxBytes) >= 0:
		why = fmt.Sprintf("must be less than %d bytes", int64(math.MaxInt64))
	}
	return field.ErrorList{field.Invalid(p, q.String(), why)}
}

// validateVolumeReferences checks the names a VMI volume refers to and the
// sizes it asks for.
func validateVolumeReferences(s *VolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	name := func(n string, fp *field.Path) { errs = append(errs, validateObjectName(n, fp)...) }
	ref := func(r *LocalObjectReference, fp *field.Path) {
		if r != nil {
			name(r.Name, fp.Child("name"))
		}
	}
	if c := s.PersistentVolumeClaim; c != nil {
		name(c.ClaimName, p.Child("persistentVolumeClaim", "claimName"))
	}
	if e := s.Ephemeral; e != nil && e.PersistentVolumeClaim != nil {
		name(e.PersistentVolumeClaim.ClaimName, p.Child("ephemeral", "persistentVolumeClaim", "claimName"))
	}
	if d := s.DataVolume; d != nil {
		name(d.Name, p.Child("dataVolume", "name"))
	}
	if c := s.ConfigMap; c != nil {
		name(c.Name, p.Child("configMap", "name"))
	}
	if c := s.Secret; c != nil {
		name(c.SecretName, p.Child("secret", "secretName"))
	}
	if c := s.ServiceAccount; c != nil {
		name(c.ServiceAccountName, p.Child("serviceAccount", "serviceAccountName"))
	}
	if c := s.ContainerDisk; c != nil {
		name(c.ImagePullSecret, p.Child("containerDisk", "imagePullSecret"))
	}
	if c := s.CloudInitNoCloud; c != nil {
		ref(c.UserDataSecretRef, p.Child("cloudInitNoCloud", "secretRef"))
		ref(c.NetworkDataSecretRef, p.Child("cloudInitNoCloud", "networkDataSecretRef"))
	}
	if c := s.CloudInitConfigDrive; c != nil {
		ref(c.UserDataSecretRef, p.Child("cloudInitConfigDrive", "secretRef"))
		ref(c.NetworkDataSecretRef, p.Child("cloudInitConfigDrive", "networkDataSecretRef"))
	}
	if c := s.Sysprep; c != nil {
		ref(c.ConfigMap, p.Child("sysprep", "configMap"))
		ref(c.Secret, p.Child("sysprep", "secret"))
	}
	if e := s.EmptyDisk; e != nil && e.Capacity.Sign() > 0 {
		errs = append(errs, validateByteSize(e.Capacity, p.Child("emptyDisk", "capacity"))...)
	}
	if h := s.HostDisk; h != nil && h.Capacity.Sign() > 0 {
		errs = append(errs, validateByteSize(h.Capacity, p.Child("hostDisk", "capacity"))...)
	}
	return errs
}

// validateDataVolumeReferences checks the clone source a DataVolume names
// and the size it asks for.
func validateDataVolumeReferences(spec *DataVolumeSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s := spec.Source; s != nil && s.PVC != nil {
		pp := p.Child("source", "pvc")
		errs = append(errs, validateObjectName(s.PVC.Name, pp.Child("name"))...)
		if ns := s.PVC.Namespace; ns != "" {
			for _, msg := range validation.IsDNS1123Label(ns) {
				errs = append(errs, field.Invalid(pp.Child("namespace"), ns, msg))
			}
		}
	}
	for _, c := range []struct {
		claim *PersistentVolumeClaimSpec
		name  string
	}{{spec.PVC, "pvc"}, {spec.Storage, "storage"}} {
		if c.claim == nil {
			continue
		}
		if q, ok := c.claim.Resources.Requests[ResourceStorage]; ok && q.Sign() > 0 {
			errs = append(errs, validateByteSize(q, p.Child(c.name, "resources", "requests", string(ResourceStorage)))...)
		}
	}
	return errs
}
