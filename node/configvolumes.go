package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// ConfigVolumeMissingReason is the Synchronized condition reason of a VMI
// that waits for the ConfigMap, Secret or ServiceAccount of one of its
// volumes.
const ConfigVolumeMissingReason = "ConfigVolumeMissing"

// configRetry is how often a VMI waiting for a config source is retried.
const configRetry = 5 * time.Second

// StoreConfig is a domain.ConfigResolver over a store: configMap and secret
// volumes get the keys of the ConfigMap or Secret of the VMI's namespace,
// serviceAccount volumes the namespace and, when the ServiceAccount lists a
// token Secret, its token and ca.crt (KubeVirt's file names). The agent
// uses it when Options.Domain.ConfigResolver is unset.
type StoreConfig struct {
	Store store.Store
}

var _ domain.ConfigResolver = StoreConfig{}

// ResolveConfig implements domain.ConfigResolver. Its errors name the
// object, never its data.
func (s StoreConfig) ResolveConfig(ctx context.Context, req domain.ConfigRequest) ([]domain.ConfigFile, error) {
	key := store.Key{Namespace: req.Namespace, Name: req.Name}
	missing := func(kind string, err error) ([]domain.ConfigFile, error) {
		if errors.Is(err, store.ErrNotFound) {
			if req.Optional {
				return nil, nil
			}
			return nil, fmt.Errorf("%s %s/%s not found: %w", kind, req.Namespace, req.Name, domain.ErrConfigSourceMissing)
		}
		return nil, fmt.Errorf("reading %s %s/%s: %w", kind, req.Namespace, req.Name, err)
	}
	switch req.Kind {
	case domain.VolumeConfigMap:
		cm := &corev1.ConfigMap{}
		if err := s.Store.Get(ctx, key, cm); err != nil {
			return missing(virtkit.KindConfigMap, err)
		}
		data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
		for k, v := range cm.Data {
			data[k] = []byte(v)
		}
		for k, v := range cm.BinaryData {
			data[k] = v
		}
		return domain.ConfigFiles(data), nil
	case domain.VolumeSecret:
		sec := &corev1.Secret{}
		if err := s.Store.Get(ctx, key, sec); err != nil {
			return missing(virtkit.KindSecret, err)
		}
		return domain.ConfigFiles(virtkit.SecretData(sec)), nil
	case domain.VolumeServiceAccount:
		sa := &corev1.ServiceAccount{}
		if err := s.Store.Get(ctx, key, sa); err != nil {
			return missing(virtkit.KindServiceAccount, err)
		}
		data := map[string][]byte{"namespace": []byte(req.Namespace)}
		for _, ref := range sa.Secrets {
			sec := &corev1.Secret{}
			if err := s.Store.Get(ctx, store.Key{Namespace: req.Namespace, Name: ref.Name}, sec); err != nil {
				if errors.Is(err, store.ErrNotFound) {
					continue
				}
				return nil, fmt.Errorf("reading Secret %s/%s of ServiceAccount %s: %w", req.Namespace, ref.Name, req.Name, err)
			}
			if sec.Type != corev1.SecretTypeServiceAccountToken {
				continue
			}
			d := virtkit.SecretData(sec)
			for _, k := range []string{corev1.ServiceAccountTokenKey, corev1.ServiceAccountRootCAKey} {
				if v, ok := d[k]; ok {
					data[k] = v
				}
			}
			break
		}
		return domain.ConfigFiles(data), nil
	}
	return nil, fmt.Errorf("config volume kind %q: %w", req.Kind, domain.ErrUnsupported)
}

// configMissing keeps a VMI whose config volume source is missing from
// starting: its Synchronized condition says why, and it is retried, since
// the source may be created later (as a pod waits for its ConfigMap).
func (a *Agent) configMissing(ctx context.Context, vmi *virtkit.VirtualMachineInstance, cause error) (reconcile.Result, error) {
	if virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{Type: virtkit.VirtualMachineInstanceSynchronized,
		Status: virtkit.ConditionFalse, Reason: ConfigVolumeMissingReason, Message: tenantMessage(cause, "a config volume source is missing")}, a.now()) {
		if err := a.opts.Store.UpdateStatus(ctx, vmi); err != nil {
			return reconcile.Result{}, err
		}
		a.event(ctx, vmi, virtkit.EventTypeWarning, ConfigVolumeMissingReason, "Start", "%s", tenantMessage(cause, "a config volume source is missing"))
	}
	a.log.Warn("config volume source missing", "vmi", vmi.Namespace+"/"+vmi.Name, "err", cause)
	return reconcile.Result{RequeueAfter: configRetry}, nil
}
