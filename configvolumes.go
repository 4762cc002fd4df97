package virtkit

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Config volumes: core/v1 ConfigMaps, Secrets and ServiceAccounts are kinds
// of the object model (as k8s.io/api/core/v1 types), and a VMI's configMap,
// secret, serviceAccount and downwardAPI volumes present their content to
// the guest as KubeVirt does: an ISO9660 disk with one file per key,
// labelled with the volume's volumeLabel or DefaultConfigVolumeLabel.

// CoreSchemeGroupVersion is the group version of the core kinds (v1).
var CoreSchemeGroupVersion = schema.GroupVersion{Group: "", Version: "v1"}

// Kind names of the core kinds.
const (
	KindConfigMap      = "ConfigMap"
	KindSecret         = "Secret"
	KindServiceAccount = "ServiceAccount"
)

// DefaultConfigVolumeLabel is the ISO volume label of a config volume that
// sets no volumeLabel, as KubeVirt labels it.
const DefaultConfigVolumeLabel = "cfgdata"

// MaxConfigDataBytes bounds the data of one ConfigMap or Secret (keys and
// values together), as Kubernetes bounds it.
const MaxConfigDataBytes = 1 << 20

// MaxVolumeLabelLength bounds volumeLabel: a Joliet volume identifier
// holds 16 characters. KubeVirt's admission does not check it; the domain
// builder refuses a longer label.
const MaxVolumeLabelLength = 16

// ConfigMapVolumeSource presents a ConfigMap of the VMI's namespace.
type ConfigMapVolumeSource struct {
	LocalObjectReference `json:",inline"`
	// Optional lets the VMI start without the ConfigMap (an empty disk).
	Optional *bool `json:"optional,omitempty"`
	// VolumeLabel is the ISO volume label (default cfgdata).
	VolumeLabel string `json:"volumeLabel,omitempty"`
}

// SecretVolumeSource presents a Secret of the VMI's namespace.
type SecretVolumeSource struct {
	// SecretName names the Secret, in the VMI's namespace.
	SecretName string `json:"secretName,omitempty"`
	// Optional lets the VMI start without the Secret (an empty disk).
	Optional *bool `json:"optional,omitempty"`
	// VolumeLabel is the ISO volume label (default cfgdata).
	VolumeLabel string `json:"volumeLabel,omitempty"`
}

// ServiceAccountVolumeSource presents a ServiceAccount's namespace and,
// when its token Secret exists, its token and CA certificate.
type ServiceAccountVolumeSource struct {
	// ServiceAccountName names the service account whose token is exposed.
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// DownwardAPIVolumeSource presents fields of the VMI's own metadata.
type DownwardAPIVolumeSource struct {
	// Fields are the VMI's fields exposed, one file each.
	Fields []DownwardAPIVolumeFile `json:"fields,omitempty"`
	// VolumeLabel is the ISO volume label (default cfgdata).
	VolumeLabel string `json:"volumeLabel,omitempty"`
}

// SysprepSource presents a Windows answer file (autounattend.xml or
// unattend.xml) from a ConfigMap or a Secret, on a disk labelled
// SysprepVolumeLabel.
type SysprepSource struct {
	// ConfigMap names the ConfigMap holding the answer file.
	ConfigMap *LocalObjectReference `json:"configMap,omitempty"`
	// Secret names the Secret holding the answer file.
	Secret *LocalObjectReference `json:"secret,omitempty"`
}

// SysprepVolumeLabel is the ISO volume label of a sysprep volume, as
// KubeVirt labels it.
const SysprepVolumeLabel = "unattendCD"

// DownwardAPIVolumeFile is one file of a downwardAPI volume.
type DownwardAPIVolumeFile struct {
	// Path is the file's relative path.
	Path string `json:"path"`
	// FieldRef selects the field: metadata.name, metadata.namespace,
	// metadata.uid, metadata.labels, metadata.annotations, or one label or
	// annotation (metadata.labels['key']).
	FieldRef *ObjectFieldSelector `json:"fieldRef,omitempty"`
	// Mode is the file's permission bits.
	Mode *int32 `json:"mode,omitempty"`
}

// ObjectFieldSelector selects a field of the object.
type ObjectFieldSelector struct {
	// APIVersion is the version of the schema the field path is written in; v1
	// by default.
	APIVersion string `json:"apiVersion,omitempty"`
	// FieldPath is the path of the field, such as metadata.labels.
	FieldPath string `json:"fieldPath"`
}

func validateConfigMap(c *corev1.ConfigMap) field.ErrorList {
	errs := validateObjectMeta(&c.ObjectMeta, true, field.NewPath("metadata"))
	size := 0
	for k, v := range c.Data {
		errs = append(errs, configKey(k, field.NewPath("data").Key(k))...)
		if _, dup := c.BinaryData[k]; dup {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(k), k, "duplicate of a key in data"))
		}
		size += len(k) + len(v)
	}
	for k, v := range c.BinaryData {
		errs = append(errs, configKey(k, field.NewPath("binaryData").Key(k))...)
		size += len(k) + len(v)
	}
	if size > MaxConfigDataBytes {
		errs = append(errs, field.TooLong(field.NewPath("data"), "", MaxConfigDataBytes))
	}
	return errs
}

func validateSecret(s *corev1.Secret) field.ErrorList {
	errs := validateObjectMeta(&s.ObjectMeta, true, field.NewPath("metadata"))
	size := 0
	for k, v := range s.Data {
		errs = append(errs, configKey(k, field.NewPath("data").Key(k))...)
		size += len(k) + len(v)
	}
	for k, v := range s.StringData {
		errs = append(errs, configKey(k, field.NewPath("stringData").Key(k))...)
		size += len(k) + len(v)
	}
	if size > MaxConfigDataBytes {
		// The value is never echoed: it is secret.
		errs = append(errs, field.TooLong(field.NewPath("data"), "", MaxConfigDataBytes))
	}
	return errs
}

func validateServiceAccount(s *corev1.ServiceAccount) field.ErrorList {
	errs := validateObjectMeta(&s.ObjectMeta, true, field.NewPath("metadata"))
	for i, r := range s.Secrets {
		if r.Name == "" {
			errs = append(errs, field.Required(field.NewPath("secrets").Index(i).Child("name"), ""))
		}
	}
	return errs
}

// configKey checks a ConfigMap or Secret key as Kubernetes does.
func configKey(k string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsConfigMapKey(k) {
		errs = append(errs, field.Invalid(p, k, msg))
	}
	return errs
}

// SecretData returns a Secret's data as a Secret volume presents it: data,
// with stringData (which the API server merges on write) taking precedence.
func SecretData(s *corev1.Secret) map[string][]byte {
	out := make(map[string][]byte, len(s.Data)+len(s.StringData))
	for k, v := range s.Data {
		out[k] = v
	}
	for k, v := range s.StringData {
		out[k] = []byte(v)
	}
	return out
}

// configVolume checks a config volume source at p.
func (v *vmiValidator) configVolume(s *VolumeSource, p *field.Path) {
	if c := s.ConfigMap; c != nil {
		if c.Name == "" {
			v.add(field.Required(p.Child("configMap", "name"), ""))
		}
	}
	if c := s.Secret; c != nil {
		if c.SecretName == "" {
			v.add(field.Required(p.Child("secret", "secretName"), ""))
		}
	}
	if c := s.ServiceAccount; c != nil && c.ServiceAccountName == "" {
		v.add(field.Required(p.Child("serviceAccount", "serviceAccountName"), ""))
	}
	// KubeVirt's admission does not look into downwardAPI volumes: the
	// domain builder checks their paths and fields.
}

// serviceAccountVolumes allows one serviceAccount volume, as KubeVirt
// does, reported at spec.volumes.
func (v *vmiValidator) serviceAccountVolumes(volPath *field.Path) {
	n := 0
	for i := range v.spec.Volumes {
		if v.spec.Volumes[i].ServiceAccount != nil {
			n++
		}
	}
	if n > 1 {
		v.add(field.Invalid(volPath, n, "must have at most one serviceAccount volume"))
	}
}

var downwardAPIFields = []string{"metadata.name", "metadata.namespace", "metadata.uid",
	"metadata.labels", "metadata.annotations", "metadata.labels['<KEY>']", "metadata.annotations['<KEY>']"}

// ParseDownwardAPIField splits a downward API field path into the field
// (name, namespace, uid, labels, annotations) and, for one label or
// annotation, its key.
func ParseDownwardAPIField(fp string) (string, string, error) {
	switch fp {
	case "metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels", "metadata.annotations":
		return fp[len("metadata."):], "", nil
	}
	for _, f := range []string{"labels", "annotations"} {
		pre := "metadata." + f + "['"
		if len(fp) > len(pre)+2 && fp[:len(pre)] == pre && fp[len(fp)-2:] == "']" {
			key := fp[len(pre) : len(fp)-2]
			if len(validation.IsQualifiedName(key)) == 0 {
				return f, key, nil
			}
		}
	}
	return "", "", fmt.Errorf("%q is not a supported field path (supported: %s): %w", fp, strings.Join(downwardAPIFields, ", "), ErrNotSupported)
}

// DownwardAPIPath checks a downward API file path: relative, without ".."
// elements, at most 255 bytes.
func DownwardAPIPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("must not be empty")
	case len(p) > 255:
		return fmt.Errorf("must be at most 255 bytes")
	case p[0] == '/':
		return fmt.Errorf("must be a relative path")
	}
	start := 0
	for i := 0; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			if p[start:i] == ".." {
				return fmt.Errorf("must not contain '..'")
			}
			start = i + 1
		}
	}
	return nil
}
