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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
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

// A change of the KubeVirt object's evictionStrategy at runtime applies
// to the next eviction of a VMI that names none, all the way: the API's
// pods/eviction marks the VMI by the new strategy and the eviction
// controller, which acts on the mark, evacuates by it too (it used to
// keep the strategy it read at start, None here, and did nothing).
func TestEvictionStrategyChangedAtRuntime(t *testing.T) {
	tests := []struct {
		to        virtkit.EvictionStrategy
		wantMoved bool
	}{
		{to: virtkit.EvictionStrategyLiveMigrate, wantMoved: true},
		{to: virtkit.EvictionStrategyExternal},
	}
	for _, tt := range tests {
		t.Run(string(tt.to), func(t *testing.T) {
			e := newDrainEnv(t, virtkit.DefaultOptions{}, nil, false) // the cluster's strategy: None
			dir := t.TempDir()
			kc := filepath.Join(dir, "admin.kubeconfig")
			s, err := cluster.StartAPIServer(e.ctx, cluster.APIServerOptions{Store: e.c.Store(), Addr: "127.0.0.1:0",
				CertDir: filepath.Join(dir, "pki"), Kubeconfig: kc})
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Stop() })
			cfg, err := clientcmd.BuildConfigFromFlags("", kc)
			require.NoError(t, err)
			client, err := kubernetes.NewForConfig(cfg)
			require.NoError(t, err)
			dyn, err := dynamic.NewForConfig(cfg)
			require.NoError(t, err)

			_, err = dyn.Resource(schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "kubevirts"}).
				Namespace(virtkit.DefaultKubeVirtNamespace).Patch(e.ctx, virtkit.DefaultKubeVirtName, types.MergePatchType,
				[]byte(`{"spec":{"configuration":{"evictionStrategy":"`+string(tt.to)+`"}}}`), metav1.PatchOptions{})
			require.NoError(t, err)

			// Admission writes the cluster's strategy into every VMI it
			// admits; this one is written as an older or foreign writer
			// leaves it, with none of its own.
			var v *virtkit.VirtualMachineInstance
			for {
				var ok bool
				v, ok = e.vmi()
				require.True(t, ok)
				v.Spec.EvictionStrategy = nil
				err := e.c.Store().Update(e.ctx, v)
				if !errors.Is(err, store.ErrConflict) {
					require.NoError(t, err)
					break
				}
			}
			pod := apicorev1.LauncherPods(v)[0].Name
			err = client.PolicyV1().Evictions("default").Evict(e.ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: "default"}})
			require.True(t, apierrors.IsTooManyRequests(err), "the new strategy marks the VMI: %v", err)
			assert.Contains(t, err.Error(), "triggered evacuation")

			// The eviction controller acts on the mark by the new strategy.
			e.advanceUntil(time.Minute, func() bool {
				v, ok := e.vmi()
				if !ok {
					return false
				}
				if tt.wantMoved {
					return v.IsRunning() && v.Status.NodeName != e.node && v.Status.EvacuationNodeName == ""
				}
				c := virtkit.GetCondition(v.Status.Conditions, virtkit.VirtualMachineInstanceEvictionRequested)
				return c != nil && c.Status == virtkit.ConditionTrue
			})
			var migs virtkit.VirtualMachineInstanceMigrationList
			require.NoError(t, e.c.Store().List(e.ctx, &migs, store.ListOptions{Namespace: "default"}))
			if !tt.wantMoved {
				assert.Empty(t, migs.Items, "External leaves the VMI to an external controller")
				v, _ := e.vmi()
				assert.Equal(t, e.node, v.Status.NodeName)
				assert.Equal(t, e.node, v.Status.EvacuationNodeName)
				return
			}
			require.Len(t, migs.Items, 1)
			assert.Equal(t, e.node, migs.Items[0].Annotations[virtkit.EvacuationMigrationAnnotation], "an evacuation migration")
		})
	}
}
