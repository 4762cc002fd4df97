package render

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
)

// renderConfig serves the ConfigMaps, Secrets and ServiceAccounts of a
// manifest to the config volumes of the VMIs it renders.
func renderConfig(objs []virtkit.Object) domain.StaticConfig {
	cfg := domain.StaticConfig{}
	for _, obj := range objs {
		ns := obj.GetNamespace()
		if ns == "" {
			ns = "default"
		}
		key := func(kind domain.VolumeKind, obj virtkit.Object) string {
			return string(kind) + "/" + ns + "/" + obj.GetName()
		}
		switch t := obj.(type) {
		case *corev1.ConfigMap:
			data := map[string][]byte{}
			for k, v := range t.Data {
				data[k] = []byte(v)
			}
			for k, v := range t.BinaryData {
				data[k] = v
			}
			cfg[key(domain.VolumeConfigMap, obj)] = data
		case *corev1.Secret:
			cfg[key(domain.VolumeSecret, obj)] = virtkit.SecretData(t)
		case *corev1.ServiceAccount:
			cfg[key(domain.VolumeServiceAccount, obj)] = map[string][]byte{"namespace": []byte(ns)}
		}
	}
	return cfg
}

// isConfigObject says whether obj only feeds config volumes.
func isConfigObject(obj virtkit.Object) bool {
	switch obj.(type) {
	case *corev1.ConfigMap, *corev1.Secret, *corev1.ServiceAccount:
		return true
	}
	return false
}
