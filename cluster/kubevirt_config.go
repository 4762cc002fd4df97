package cluster

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

func installKubeVirtWithTimeout(st store.Store, cfg *virtkit.KubeVirtConfiguration, eviction virtkit.EvictionStrategy, now metav1.Time) (*virtkit.KubeVirtConfiguration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	out, err := installKubeVirt(ctx, st, cfg, eviction, now)
	if err != nil {
		return nil, fmt.Errorf("installing the KubeVirt object: %w", err)
	}
	return out, nil
}

// installKubeVirt creates the cluster's KubeVirt object (kubevirt in
// namespace kubevirt) with cfg, KubeVirt's default configuration when cfg
// is nil, and returns the configuration the cluster has. An object the
// store already holds is the cluster's configuration and is kept, unless
// cfg is given: then its spec.configuration becomes cfg. A non-empty
// eviction (Options.Defaults.EvictionStrategy) is written as the
// configuration's evictionStrategy either way: the object is the one
// place the cluster-wide eviction strategy is read from (the API's pod
// evictions, Cluster.Drain, admission), so the option must be there.
func installKubeVirt(ctx context.Context, st store.Store, cfg *virtkit.KubeVirtConfiguration, eviction virtkit.EvictionStrategy, now metav1.Time) (*virtkit.KubeVirtConfiguration, error) {
	kv := virtkit.DefaultKubeVirt()
	if cfg != nil {
		kv.Spec.Configuration = *cfg.DeepCopy()
	}
	if eviction != "" {
		kv.Spec.Configuration.EvictionStrategy = &eviction
	}
	if errs := virtkit.Validate(kv); len(errs) > 0 {
		return nil, fmt.Errorf("Options.KubeVirt: %w", errs.ToAggregate())
	}
	kv.Status = virtkit.KubeVirtStatus{Phase: virtkit.KubeVirtPhaseDeployed, Conditions: []virtkit.KubeVirtCondition{{
		Type: "Available", Status: virtkit.ConditionTrue, LastProbeTime: now, LastTransitionTime: now,
		Reason: "AllComponentsReady", Message: "All components are ready.",
	}}}
	for range applyAttempts {
		err := st.Create(ctx, kv.DeepCopy())
		if !errors.Is(err, store.ErrAlreadyExists) {
			if err != nil {
				return nil, err
			}
			return &kv.Spec.Configuration, nil
		}
		cur := &virtkit.KubeVirt{}
		if err := st.Get(ctx, store.KeyOf(kv), cur); errors.Is(err, store.ErrNotFound) {
			continue
		} else if err != nil {
			return nil, err
		}
		switch {
		case cfg != nil:
			cur.Spec.Configuration = *kv.Spec.Configuration.DeepCopy()
		case eviction == "" || ptrEqual(cur.Spec.Configuration.EvictionStrategy, eviction):
			return &cur.Spec.Configuration, nil
		default:
			cur.Spec.Configuration.EvictionStrategy = &eviction
		}
		if err := st.Update(ctx, cur); !errors.Is(err, store.ErrConflict) {
			if err != nil {
				return nil, err
			}
			return &cur.Spec.Configuration, nil
		}
	}
	return nil, fmt.Errorf("gave up after %d conflicting writes", applyAttempts)
}

func ptrEqual[T comparable](p *T, v T) bool { return p != nil && *p == v }

// ClusterEvictionStrategy reads the cluster-wide eviction strategy, the
// one VMIs without spec.evictionStrategy are evicted by: the KubeVirt
// object's spec.configuration.evictionStrategy, None when it names none
// or there is no KubeVirt object. The API's pods/eviction reads the same.
func ClusterEvictionStrategy(ctx context.Context, st store.Store) (virtkit.EvictionStrategy, error) {
	kv := &virtkit.KubeVirt{}
	err := st.Get(ctx, store.Key{Namespace: virtkit.DefaultKubeVirtNamespace, Name: virtkit.DefaultKubeVirtName}, kv)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("reading the cluster's eviction strategy: %w", err)
	}
	return kv.Spec.Configuration.ClusterEvictionStrategy(), nil
}
