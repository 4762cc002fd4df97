package cluster_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/virtkit/virtkit"
	apicorev1 "github.com/virtkit/virtkit/apiserver/corev1"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/store"
)

// The cluster-wide eviction strategy has one source, the KubeVirt
// object, which Defaults.EvictionStrategy seeds and overrides: a VMI that
// names no strategy is evicted alike by the API's pods/eviction (what
// kubectl drain posts) and by Cluster.Drain, whichever of the two options
// set it, and after the object changes.
func TestEvictionStrategyOneSourceForBothDrains(t *testing.T) {
	es := func(s virtkit.EvictionStrategy) *virtkit.EvictionStrategy { return &s }
	tests := []struct {
		name     string
		defaults virtkit.EvictionStrategy
		kubevirt *virtkit.KubeVirtConfiguration
		changeTo *virtkit.EvictionStrategy // the KubeVirt object's, written after New
		want     virtkit.EvictionStrategy
	}{
		{name: "neither", want: virtkit.EvictionStrategyNone},
		{name: "the Go option only", defaults: virtkit.EvictionStrategyLiveMigrate, want: virtkit.EvictionStrategyLiveMigrate},
		{name: "the KubeVirt configuration only", kubevirt: &virtkit.KubeVirtConfiguration{EvictionStrategy: es(virtkit.EvictionStrategyExternal)},
			want: virtkit.EvictionStrategyExternal},
		{name: "the Go option overrides the configuration", defaults: virtkit.EvictionStrategyExternal,
			kubevirt: &virtkit.KubeVirtConfiguration{EvictionStrategy: es(virtkit.EvictionStrategyNone)}, want: virtkit.EvictionStrategyExternal},
		{name: "the object changed later", defaults: virtkit.EvictionStrategyLiveMigrate, changeTo: es(virtkit.EvictionStrategyNone),
			want: virtkit.EvictionStrategyNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			c, err := cluster.New(cluster.Options{Nodes: 1, Defaults: virtkit.DefaultOptions{EvictionStrategy: tt.defaults}, KubeVirt: tt.kubevirt})
			require.NoError(t, err)
			st := c.Store()
			if tt.changeTo != nil {
				kv := &virtkit.KubeVirt{}
				require.NoError(t, st.Get(ctx, store.Key{Namespace: virtkit.DefaultKubeVirtNamespace, Name: virtkit.DefaultKubeVirtName}, kv))
				kv.Spec.Configuration.EvictionStrategy = tt.changeTo
				require.NoError(t, st.Update(ctx, kv))
			}
			got, err := cluster.ClusterEvictionStrategy(ctx, st)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got, "the KubeVirt object's")

			// The control plane is not started: the VMIs, written straight
			// to the store, name no strategy and cannot live-migrate, so the
			// outcome tells the strategy without anything moving.
			require.NoError(t, st.Create(ctx, &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}))
			apiVMI := runningVMI(t, st, "via-api")
			runningVMI(t, st, "via-drain")

			dir := t.TempDir()
			kc := filepath.Join(dir, "admin.kubeconfig")
			s, err := cluster.StartAPIServer(ctx, cluster.APIServerOptions{Store: st, Addr: "127.0.0.1:0",
				CertDir: filepath.Join(dir, "pki"), Kubeconfig: kc})
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Stop() })
			cfg, err := clientcmd.BuildConfigFromFlags("", kc)
			require.NoError(t, err)
			client, err := kubernetes.NewForConfig(cfg)
			require.NoError(t, err)
			pod := apicorev1.LauncherPods(apiVMI)[0].Name
			err = client.PolicyV1().Evictions("default").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: "default"}})
			viaAPI := virtkit.EvictionStrategyNone // evicted: the VMI is shut down
			switch {
			case apierrors.IsTooManyRequests(err) && strings.Contains(err.Error(), "not live-migratable"):
				viaAPI = virtkit.EvictionStrategyLiveMigrate
			case apierrors.IsTooManyRequests(err) && strings.Contains(err.Error(), "triggered evacuation"):
				viaAPI = virtkit.EvictionStrategyExternal // the VMI cannot migrate: only External marks it
			default:
				require.NoError(t, err)
			}
			assert.Equal(t, tt.want, viaAPI, "kubectl drain's eviction: %v", err)

			var (
				mu    sync.Mutex
				first *controller.DrainVMI
			)
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			err = c.Drain(dctx, "node-1", controller.DrainOptions{Interval: 10 * time.Millisecond, Progress: func(p controller.DrainProgress) {
				mu.Lock()
				defer mu.Unlock()
				for i := range p.VMIs {
					if p.VMIs[i].Name == "via-drain" && first == nil {
						first = &p.VMIs[i]
						cancel()
					}
				}
			}})
			if err != nil {
				require.True(t, errors.Is(err, context.Canceled), "%v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			require.NotNil(t, first, "the drain reported the VMI")
			assert.Equal(t, tt.want, first.Strategy, "the library's drain")
		})
	}
}

func runningVMI(t *testing.T, st store.Store, name string) *virtkit.VirtualMachineInstance {
	t.Helper()
	vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	require.NoError(t, st.Create(t.Context(), vmi))
	vmi.Status.Phase, vmi.Status.NodeName = virtkit.Running, "node-1"
	require.NoError(t, st.UpdateStatus(t.Context(), vmi))
	return vmi
}
