package importer

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/events"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// ErrSourceConfigMissing: the Secret or ConfigMap a source names does not
// exist. The import waits for it, as CDI's importer pod waits for the
// Secret and ConfigMap it mounts.
var ErrSourceConfigMissing = errors.New("source secret or config map not found")

// Keys of an S3 (or HTTP) source's Secret, as CDI names them.
const (
	SecretKeyAccessKeyID = "accessKeyId"
	SecretKeySecretKey   = "secretKey"
)

// ReasonCreateContainerConfigError is the Running condition reason of a
// DataVolume waiting for its source's Secret or ConfigMap (the reason the
// kubelet gives CDI's importer pod).
const ReasonCreateContainerConfigError = "CreateContainerConfigError"

// sourceConfigRetry is how often an import waiting for its source's Secret
// or ConfigMap looks again.
const sourceConfigRetry = 5 * time.Second

// s3Source builds the S3 source of dv: its URL, the credentials of its
// secretRef and the CA bundle of its certConfigMap.
func (w *Worker) s3Source(ctx context.Context, dv *virtkit.DataVolume) (*S3Source, error) {
	s := dv.Spec.Source.S3
	out := &S3Source{URL: s.URL}
	if s.SecretRef != "" {
		sec := &corev1.Secret{}
		if err := w.opts.Store.Get(ctx, store.Key{Namespace: dv.Namespace, Name: s.SecretRef}, sec); err != nil {
			return nil, configError("secret", dv.Namespace, s.SecretRef, err)
		}
		data := virtkit.SecretData(sec)
		out.AccessKeyID, out.SecretKey = string(data[SecretKeyAccessKeyID]), string(data[SecretKeySecretKey])
		var missing []string
		for _, k := range []string{SecretKeyAccessKeyID, SecretKeySecretKey} {
			if len(data[k]) == 0 {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			err := fmt.Errorf("%w: secret %s/%s has no %v", ErrBadSource, dv.Namespace, s.SecretRef, missing)
			return nil, public(err, "secret %q has no %v key", s.SecretRef, missing)
		}
	}
	if s.CertConfigMap != "" {
		pool, err := w.certPool(ctx, dv.Namespace, s.CertConfigMap)
		if err != nil {
			return nil, err
		}
		out.RootCAs = pool
	}
	return out, nil
}

// certPool reads every PEM certificate of a ConfigMap (CDI mounts each key
// as a file of its certificate directory).
func (w *Worker) certPool(ctx context.Context, namespace, name string) (*x509.CertPool, error) {
	cm := &corev1.ConfigMap{}
	if err := w.opts.Store.Get(ctx, store.Key{Namespace: namespace, Name: name}, cm); err != nil {
		return nil, configError("configmap", namespace, name, err)
	}
	pool := x509.NewCertPool()
	keys := make([]string, 0, len(cm.Data))
	for k := range cm.Data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	ok := false
	for _, k := range keys {
		ok = pool.AppendCertsFromPEM([]byte(cm.Data[k])) || ok
	}
	if !ok {
		err := fmt.Errorf("%w: configmap %s/%s holds no PEM certificate", ErrBadSource, namespace, name)
		return nil, public(err, "configmap %q holds no PEM certificate", name)
	}
	return pool, nil
}

func configError(kind, namespace, name string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return public(fmt.Errorf("%w: %s %s/%s", ErrSourceConfigMissing, kind, namespace, name), "%s %q not found", kind, name)
	}
	return fmt.Errorf("reading %s %s/%s: %w", kind, namespace, name, err)
}

// waitForConfig keeps a DataVolume whose source's Secret or ConfigMap is
// missing scheduled, says why in its Running condition, and looks again
// later.
func (w *Worker) waitForConfig(ctx context.Context, dv *virtkit.DataVolume, cause error) (reconcile.Result, error) {
	msg := TenantMessage(cause)
	if dv.Status.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeRunning, Status: virtkit.ConditionFalse,
		Reason: ReasonCreateContainerConfigError, Message: msg}, w.now()) {
		if err := w.opts.Store.UpdateStatus(ctx, dv); err != nil {
			return reconcile.Result{}, err
		}
		events.RecordEvent(ctx, w.opts.Events, dv, virtkit.EventTypeWarning, ReasonCreateContainerConfigError, "Import", "Import waits: %s", msg)
	}
	w.log.InfoContext(ctx, "import waits for its source's configuration", "datavolume", dv.Namespace+"/"+dv.Name, "err", cause)
	return reconcile.Result{RequeueAfter: sourceConfigRetry}, nil
}
