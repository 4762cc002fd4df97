package corev1

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
)

// maxDataBytes bounds a ConfigMap's or Secret's data as Kubernetes does.
const maxDataBytes = virtkit.MaxConfigDataBytes

var metadataPath = field.NewPath("metadata")

// validateMeta checks a new object's metadata: names as DNS-1123
// subdomains, or labels for namespaces (nameFn).
func validateMeta(meta *metav1.ObjectMeta, namespaced bool, nameFn apimachineryvalidation.ValidateNameFunc) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMeta(meta, namespaced, nameFn, metadataPath)
}

// validateDataKeys checks keys as Kubernetes checks ConfigMap and Secret
// keys (IsConfigMapKey) and that a key appears once across both maps.
func validateDataKeys(path *field.Path, keys []string, seen map[string]bool) field.ErrorList {
	var errs field.ErrorList
	slices.Sort(keys)
	for _, k := range keys {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(path.Key(k), k, msg))
		}
		if seen[k] {
			errs = append(errs, field.Invalid(path.Key(k), k, "duplicate of key present in another data field"))
		}
		seen[k] = true
	}
	return errs
}

// ValidateConfigMap checks a ConfigMap as kube-apiserver does: metadata,
// data and binaryData keys, and their total size at most 1 MiB.
func ValidateConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	errs := validateMeta(&cm.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	seen := map[string]bool{}
	errs = append(errs, validateDataKeys(field.NewPath("data"), slices.Collect(maps.Keys(cm.Data)), seen)...)
	errs = append(errs, validateDataKeys(field.NewPath("binaryData"), slices.Collect(maps.Keys(cm.BinaryData)), seen)...)
	size := 0
	for k, v := range cm.Data {
		size += len(k) + len(v)
	}
	for k, v := range cm.BinaryData {
		size += len(k) + len(v)
	}
	if size > maxDataBytes {
		errs = append(errs, field.TooLong(field.NewPath("data"), "", maxDataBytes))
	}
	return errs
}

// ValidateConfigMapUpdate checks an update: an immutable ConfigMap's data
// and immutability cannot change.
func ValidateConfigMapUpdate(cm, old *corev1.ConfigMap) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&cm.ObjectMeta, &old.ObjectMeta, metadataPath)
	if old.Immutable != nil && *old.Immutable {
		if cm.Immutable == nil || !*cm.Immutable {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
		}
		if !maps.Equal(cm.Data, old.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
		}
		if !maps.EqualFunc(cm.BinaryData, old.BinaryData, slices.Equal) {
			errs = append(errs, field.Forbidden(field.NewPath("binaryData"), "field is immutable when `immutable` is set"))
		}
	}
	return append(errs, ValidateConfigMap(cm)...)
}

// ValidateSecret checks a Secret as kube-apiserver does: metadata, data
// keys, total size at most 1 MiB and the keys its type requires.
func ValidateSecret(s *corev1.Secret) field.ErrorList {
	errs := validateMeta(&s.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	data := field.NewPath("data")
	errs = append(errs, validateDataKeys(data, slices.Collect(maps.Keys(s.Data)), map[string]bool{})...)
	size := 0
	for _, v := range s.Data {
		size += len(v)
	}
	if size > maxDataBytes {
		errs = append(errs, field.TooLong(data, "", maxDataBytes))
	}
	require := func(keys ...string) {
		for _, k := range keys {
			if _, ok := s.Data[k]; !ok {
				errs = append(errs, field.Required(data.Key(k), ""))
			}
		}
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(metadataPath.Child("annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		require(corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		require(corev1.DockerConfigJsonKey)
	case corev1.SecretTypeSSHAuth:
		require(corev1.SSHAuthPrivateKey)
	case corev1.SecretTypeTLS:
		require(corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
	case corev1.SecretTypeBasicAuth:
		_, user := s.Data[corev1.BasicAuthUsernameKey]
		_, pass := s.Data[corev1.BasicAuthPasswordKey]
		if !user && !pass {
			errs = append(errs, field.Required(data.Key(corev1.BasicAuthUsernameKey), "either username or password is required"))
		}
	case corev1.SecretTypeOpaque, "":
	default:
		for _, msg := range validation.IsQualifiedName(string(s.Type)) {
			errs = append(errs, field.Invalid(field.NewPath("type"), s.Type, msg))
		}
	}
	return errs
}

// ValidateSecretUpdate checks an update: the type never changes, an
// immutable Secret's data and immutability cannot change.
func ValidateSecretUpdate(s, old *corev1.Secret) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&s.ObjectMeta, &old.ObjectMeta, metadataPath)
	if s.Type != old.Type {
		errs = append(errs, field.Invalid(field.NewPath("type"), s.Type, "field is immutable"))
	}
	if old.Immutable != nil && *old.Immutable {
		if s.Immutable == nil || !*s.Immutable {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
		}
		if !maps.EqualFunc(s.Data, old.Data, slices.Equal) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
		}
	}
	return append(errs, ValidateSecret(s)...)
}

// ValidateServiceAccount checks a ServiceAccount's metadata and the names
// it references.
func ValidateServiceAccount(sa *corev1.ServiceAccount) field.ErrorList {
	errs := validateMeta(&sa.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	for i, s := range sa.Secrets {
		if s.Name == "" {
			errs = append(errs, field.Required(field.NewPath("secrets").Index(i).Child("name"), ""))
		}
	}
	for i, s := range sa.ImagePullSecrets {
		if s.Name == "" {
			errs = append(errs, field.Required(field.NewPath("imagePullSecrets").Index(i).Child("name"), ""))
		}
	}
	return errs
}

// ValidateNamespace checks a namespace: a DNS-1123 label name and
// qualified spec.finalizers.
func ValidateNamespace(ns *corev1.Namespace) field.ErrorList {
	errs := validateMeta(&ns.ObjectMeta, false, apimachineryvalidation.ValidateNamespaceName)
	return append(errs, validateNamespaceFinalizers(ns)...)
}

func validateNamespaceFinalizers(ns *corev1.Namespace) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("spec", "finalizers")
	for i, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			continue
		}
		for _, msg := range validation.IsQualifiedName(string(f)) {
			errs = append(errs, field.Invalid(path.Index(i), f, msg))
		}
		if !slices.Contains([]byte(f), '/') {
			errs = append(errs, field.Invalid(path.Index(i), f, "name is neither a standard finalizer name nor is it fully qualified"))
		}
	}
	return errs
}
