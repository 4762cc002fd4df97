package virtkit

import (
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ResourceStorage is the storage request of a claim.
const ResourceStorage ResourceName = "storage"

// DataVolumeSize returns the requested size of a DataVolume spec (from pvc
// or storage), and whether one is set.
func DataVolumeSize(spec *DataVolumeSpec) (int64, bool) {
	c := spec.PVC
	if c == nil {
		c = spec.Storage
	}
	if c == nil {
		return 0, false
	}
	q, ok := c.Resources.Requests[ResourceStorage]
	if !ok {
		return 0, false
	}
	return q.Value(), true
}

// setDataVolumeSpecDefaults fills CDI's defaults: contentType kubevirt,
// registry pullMethod pod, and for spec.storage the storage profile's
// access mode (ReadWriteOnce) and volume mode (Filesystem). A pvc source
// without a namespace clones from the DataVolume's own namespace.
func setDataVolumeSpecDefaults(spec *DataVolumeSpec, namespace string) {
	if spec.ContentType == "" {
		spec.ContentType = DataVolumeKubeVirt
	}
	if s := spec.Source; s != nil {
		if s.Registry != nil && s.Registry.PullMethod == nil {
			m := RegistryPullPod
			s.Registry.PullMethod = &m
		}
		if s.PVC != nil && s.PVC.Namespace == "" {
			s.PVC.Namespace = namespace
		}
		if s.Snapshot != nil && s.Snapshot.Namespace == "" {
			s.Snapshot.Namespace = namespace
		}
	}
	if st := spec.Storage; st != nil {
		if len(st.AccessModes) == 0 {
			st.AccessModes = []PersistentVolumeAccessMode{ReadWriteOnce}
		}
		if st.VolumeMode == nil {
			m := PersistentVolumeFilesystem
			st.VolumeMode = &m
		}
	}
}

// SetDataVolumeDefaults defaults a DataVolume as CDI's mutating webhook
// and storage profiles do.
func SetDataVolumeDefaults(dv *DataVolume) { setDataVolumeSpecDefaults(&dv.Spec, dv.Namespace) }

func validateDataVolume(dv *DataVolume) field.ErrorList {
	errs := validateObjectMeta(&dv.ObjectMeta, true, field.NewPath("metadata"))
	return append(errs, validateDataVolumeSpec(&dv.Spec, field.NewPath("spec"))...)
}

// validateDataVolumeSpec follows CDI's DataVolume admission and refuses,
// with NotSupported naming the field, what virtkit's importer does not do.
func validateDataVolumeSpec(spec *DataVolumeSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	notSupported := func(fp *field.Path, what string) {
		errs = append(errs, field.NotSupported[string](fp, what, nil))
		errs[len(errs)-1].Detail = what + " is not supported by virtkit's importer"
	}
	switch {
	case spec.Source == nil && spec.SourceRef == nil:
		errs = append(errs, field.Required(p.Child("source"), "Data volume should have either Source or SourceRef"))
	case spec.Source != nil && spec.SourceRef != nil:
		errs = append(errs, field.Forbidden(p.Child("sourceRef"), "Data volume can have only one of source or sourceRef"))
	case spec.SourceRef != nil:
		notSupported(p.Child("sourceRef"), "sourceRef (DataSource)")
	}
	switch {
	case spec.PVC == nil && spec.Storage == nil:
		errs = append(errs, field.Required(p.Child("pvc"), "Missing Data volume PVC: one of pvc or storage is required"))
	case spec.PVC != nil && spec.Storage != nil:
		errs = append(errs, field.Forbidden(p.Child("storage"), "pvc and storage are mutually exclusive"))
	case spec.PVC != nil:
		errs = append(errs, validateClaim(spec.PVC, p.Child("pvc"), true, sizeFromSource(spec))...)
	default:
		errs = append(errs, validateClaim(spec.Storage, p.Child("storage"), false, sizeFromSource(spec))...)
	}
	switch spec.ContentType {
	case "", DataVolumeKubeVirt:
	case DataVolumeArchive:
		notSupported(p.Child("contentType"), "contentType archive")
	default:
		errs = append(errs, field.NotSupported(p.Child("contentType"), spec.ContentType, []DataVolumeContentType{DataVolumeKubeVirt, DataVolumeArchive}))
	}
	if len(spec.Checkpoints) > 0 {
		notSupported(p.Child("checkpoints"), "multi-stage import (checkpoints)")
	}
	if spec.FinalCheckpoint {
		notSupported(p.Child("finalCheckpoint"), "multi-stage import (finalCheckpoint)")
	}
	if spec.Source != nil {
		errs = append(errs, validateDataVolumeSource(spec.Source, p.Child("source"), notSupported)...)
	}
	return append(errs, validateDataVolumeReferences(spec, p)...)
}

func validateClaim(c *PersistentVolumeClaimSpec, p *field.Path, modesRequired, clone bool) field.ErrorList {
	var errs field.ErrorList
	if c.Selector != nil {
		e := field.NotSupported[string](p.Child("selector"), "selector", nil)
		e.Detail = "binding to a pre-provisioned volume by selector is not supported by virtkit"
		errs = append(errs, e)
	}
	if c.VolumeName != "" {
		e := field.NotSupported[string](p.Child("volumeName"), c.VolumeName, nil)
		e.Detail = "binding to a named pre-provisioned volume is not supported by virtkit"
		errs = append(errs, e)
	}
	if modesRequired && len(c.AccessModes) == 0 {
		errs = append(errs, field.Required(p.Child("accessModes"), "at least 1 access mode is required"))
	}
	if len(c.AccessModes) > 1 {
		errs = append(errs, field.Invalid(p.Child("accessModes"), c.AccessModes, "PVC multiple accessModes"))
	}
	modes := []PersistentVolumeAccessMode{ReadWriteOnce, ReadOnlyMany, ReadWriteMany, ReadWriteOncePod}
	for i, m := range c.AccessModes {
		if !slices.Contains(modes, m) {
			errs = append(errs, field.NotSupported(p.Child("accessModes").Index(i), m, modes))
		}
	}
	if c.VolumeMode != nil && *c.VolumeMode != PersistentVolumeFilesystem {
		if *c.VolumeMode == PersistentVolumeBlock {
			e := field.NotSupported(p.Child("volumeMode"), *c.VolumeMode, []PersistentVolumeMode{PersistentVolumeFilesystem})
			e.Detail = "block volumes are not supported by virtkit's provisioners; " + e.Detail
			errs = append(errs, e)
		} else {
			errs = append(errs, field.NotSupported(p.Child("volumeMode"), *c.VolumeMode, []PersistentVolumeMode{PersistentVolumeFilesystem, PersistentVolumeBlock}))
		}
	}
	sp := p.Child("resources", "requests", string(ResourceStorage))
	q, ok := c.Resources.Requests[ResourceStorage]
	switch {
	case !ok && !clone:
		errs = append(errs, field.Required(sp, "PVC size is missing"))
	case ok && q.Sign() <= 0:
		errs = append(errs, field.Invalid(sp, q.String(), "PVC size can't be equal or less than zero"))
	}
	return errs
}

func validateDataVolumeSource(s *DataVolumeImportSource, p *field.Path, notSupported func(*field.Path, string)) field.ErrorList {
	var errs field.ErrorList
	n := countSet(s.HTTP != nil, s.S3 != nil, s.GCS != nil, s.Registry != nil, s.PVC != nil, s.Upload != nil,
		s.Blank != nil, s.ImageIO != nil, s.VDDK != nil, s.Snapshot != nil)
	switch {
	case n == 0:
		errs = append(errs, field.Required(p, "Missing Data volume source"))
	case n > 1:
		errs = append(errs, field.Invalid(p, n, "Multiple Data volume sources specified: must have exactly one source type set"))
	}
	if h := s.HTTP; h != nil {
		hp := p.Child("http")
		errs = append(errs, validateSourceURL(h.URL, hp.Child("url"), "http", "https")...)
		if h.SecretRef != "" {
			notSupported(hp.Child("secretRef"), "http secretRef")
		}
		if h.CertConfigMap != "" {
			notSupported(hp.Child("certConfigMap"), "http certConfigMap")
		}
		if len(h.SecretExtraHeaders) > 0 {
			notSupported(hp.Child("secretExtraHeaders"), "http secretExtraHeaders")
		}
		if h.Checksum != "" {
			alg, sum, ok := strings.Cut(h.Checksum, ":")
			if !ok || !slices.Contains([]string{"md5", "sha1", "sha256", "sha512"}, alg) || sum == "" || strings.Trim(sum, "0123456789abcdefABCDEF") != "" {
				errs = append(errs, field.Invalid(hp.Child("checksum"), h.Checksum, "must be algorithm:hex with md5, sha1, sha256 or sha512"))
			}
		}
		for i, hdr := range h.ExtraHeaders {
			name, _, ok := strings.Cut(hdr, ":")
			if !ok || strings.TrimSpace(name) == "" || strings.ContainsAny(name, " \t\r\n") || strings.ContainsAny(hdr, "\r\n") {
				errs = append(errs, field.Invalid(hp.Child("extraHeaders").Index(i), hdr, `must be "Name: value"`))
			}
		}
	}
	if s3 := s.S3; s3 != nil {
		sp := p.Child("s3")
		if errs2 := validateSourceURL(s3.URL, sp.Child("url"), "http", "https"); len(errs2) > 0 {
			errs = append(errs, errs2...)
		} else if u, _ := url.Parse(s3.URL); !strings.Contains(strings.Trim(u.Path, "/"), "/") {
			errs = append(errs, field.Invalid(sp.Child("url"), s3.URL, "want http(s)://host/bucket/key"))
		}
	}
	if s.GCS != nil {
		notSupported(p.Child("gcs"), "gcs source")
	}
	if s.ImageIO != nil {
		notSupported(p.Child("imageio"), "imageio source")
	}
	if s.VDDK != nil {
		notSupported(p.Child("vddk"), "vddk source")
	}
	if sn := s.Snapshot; sn != nil {
		errs = append(errs, validateSnapshotSource(sn, p.Child("snapshot"))...)
	}
	if r := s.Registry; r != nil {
		rp := p.Child("registry")
		switch {
		case r.URL == nil && r.ImageStream == nil:
			errs = append(errs, field.Required(rp.Child("url"), "source registry should have either url or imageStream"))
		case r.URL != nil && r.ImageStream != nil:
			errs = append(errs, field.Forbidden(rp.Child("imageStream"), "source registry should not have both url and imageStream"))
		case r.ImageStream != nil:
			notSupported(rp.Child("imageStream"), "registry imageStream")
		default:
			u := *r.URL
			switch {
			case strings.HasPrefix(u, "docker://"):
				if strings.TrimPrefix(u, "docker://") == "" {
					errs = append(errs, field.Invalid(rp.Child("url"), u, "no image after docker://"))
				}
			case strings.HasPrefix(u, "oci-archive://"):
				notSupported(rp.Child("url"), "registry oci-archive:// URL")
			default:
				errs = append(errs, field.Invalid(rp.Child("url"), u, "illegal registry source URL scheme: want docker:// or oci-archive://"))
			}
		}
		if r.PullMethod != nil && *r.PullMethod != RegistryPullPod && *r.PullMethod != RegistryPullNode {
			errs = append(errs, field.NotSupported(rp.Child("pullMethod"), *r.PullMethod, []RegistryPullMethod{RegistryPullPod, RegistryPullNode}))
		}
		if r.SecretRef != nil && *r.SecretRef != "" {
			notSupported(rp.Child("secretRef"), "registry secretRef")
		}
		if r.CertConfigMap != nil && *r.CertConfigMap != "" {
			notSupported(rp.Child("certConfigMap"), "registry certConfigMap")
		}
	}
	if c := s.PVC; c != nil && c.Name == "" {
		errs = append(errs, field.Required(p.Child("pvc", "name"), "Clone source name not specified"))
	}
	return errs
}

func validateSourceURL(raw string, p *field.Path, schemes ...string) field.ErrorList {
	if raw == "" {
		return field.ErrorList{field.Required(p, "source URL is empty")}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return field.ErrorList{field.Invalid(p, raw, "not a valid URL: "+err.Error())}
	}
	if !slices.Contains(schemes, u.Scheme) || u.Host == "" {
		return field.ErrorList{field.Invalid(p, raw, "want an absolute "+strings.Join(schemes, " or ")+" URL")}
	}
	return nil
}
