package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

func newRS(name string, replicas int32) *virtkit.VirtualMachineInstanceReplicaSet {
	return &virtkit.VirtualMachineInstanceReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: virtkit.VirtualMachineInstanceReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: vmiTemplate(name),
		},
	}
}

func (e *env) getRS(name string) *virtkit.VirtualMachineInstanceReplicaSet {
	e.t.Helper()
	rs := &virtkit.VirtualMachineInstanceReplicaSet{}
	require.NoError(e.t, e.st.Get(e.ctx, key(name), rs))
	return rs
}

func (e *env) vmisOf(rsName string) []virtkit.VirtualMachineInstance {
	e.t.Helper()
	list := &virtkit.VirtualMachineInstanceList{}
	require.NoError(e.t, e.st.List(e.ctx, list, store.ListOptions{Namespace: "default"}))
	var out []virtkit.VirtualMachineInstance
	for _, v := range list.Items {
		if ref := controllerOf(&v); ref != nil && ref.Kind == virtkit.KindVirtualMachineInstanceReplicaSet && ref.Name == rsName {
			out = append(out, v)
		}
	}
	return out
}

func (e *env) scale(name string, replicas int32) {
	e.t.Helper()
	rs := e.getRS(name)
	rs.Spec.Replicas = &replicas
	require.NoError(e.t, e.st.Update(e.ctx, rs))
}

func TestReplicaSetScales(t *testing.T) {
	e := newEnv(t, 2)
	require.NoError(t, e.st.Create(e.ctx, newRS("web", 3)))
	e.settle()
	rs := e.getRS("web")
	vmis := e.vmisOf("web")
	require.Len(t, vmis, 3)
	for _, v := range vmis {
		assert.Equal(t, virtkit.Running, v.Status.Phase)
		assert.Equal(t, "web", v.Labels["app"])
		assert.Regexp(t, "^web[a-z0-9]{5}$", v.Name, "generateName is the ReplicaSet name")
	}
	assert.EqualValues(t, 3, rs.Status.Replicas)
	assert.EqualValues(t, 3, rs.Status.ReadyReplicas)
	assert.Equal(t, "app=web", rs.Status.LabelSelector)
	assert.Empty(t, rs.Status.Conditions)

	e.scale("web", 1)
	e.settle()
	assert.Len(t, e.vmisOf("web"), 1)
	assert.EqualValues(t, 1, e.getRS("web").Status.Replicas)

	e.scale("web", 0)
	e.settle()
	assert.Empty(t, e.vmisOf("web"))
	assert.EqualValues(t, 0, e.getRS("web").Status.ReadyReplicas)
}

func TestReplicaSetReplacesFinalVMIs(t *testing.T) {
	e := newEnv(t, 2)
	require.NoError(t, e.st.Create(e.ctx, newRS("web", 2)))
	e.settle()
	victim := e.vmisOf("web")[0]
	e.guestStops(victim.Name, virtkit.Failed)
	e.settle()
	vmis := e.vmisOf("web")
	require.Len(t, vmis, 2)
	for _, v := range vmis {
		assert.NotEqual(t, victim.UID, v.UID)
		assert.Equal(t, virtkit.Running, v.Status.Phase)
	}
}

func TestReplicaSetPaused(t *testing.T) {
	e := newEnv(t, 2)
	rs := newRS("web", 2)
	rs.Spec.Paused = true
	require.NoError(t, e.st.Create(e.ctx, rs))
	e.settle()
	assert.Empty(t, e.vmisOf("web"))
	got := e.getRS("web")
	assert.True(t, virtkit.HasCondition(got.Status.Conditions, virtkit.VirtualMachineInstanceReplicaSetReplicaPaused, virtkit.ConditionTrue, virtkit.PausedReplicaSetReason))

	got.Spec.Paused = false
	require.NoError(t, e.st.Update(e.ctx, got))
	e.settle()
	assert.Len(t, e.vmisOf("web"), 2)
	assert.Nil(t, virtkit.GetCondition(e.getRS("web").Status.Conditions, virtkit.VirtualMachineInstanceReplicaSetReplicaPaused))
}

func TestReplicaSetAdoptsOrphansAndReleases(t *testing.T) {
	e := newEnv(t, 2)
	orphan := newVMI("orphan", "1Gi")
	orphan.Labels = map[string]string{"app": "web"}
	require.NoError(t, e.st.Create(e.ctx, orphan))
	require.NoError(t, e.st.Create(e.ctx, newRS("web", 2)))
	e.settle()
	vmis := e.vmisOf("web")
	require.Len(t, vmis, 2)
	names := []string{vmis[0].Name, vmis[1].Name}
	assert.Contains(t, names, "orphan")

	// Relabelled: released and replaced.
	o := e.getVMI("orphan")
	o.Labels["app"] = "other"
	require.NoError(t, e.st.Update(e.ctx, o))
	e.settle()
	assert.Nil(t, controllerOf(e.getVMI("orphan")))
	assert.Len(t, e.vmisOf("web"), 2)
}

func TestReplicaSetBurst(t *testing.T) {
	e := newEnv(t, 0)
	e.addNode("n1", "1000", "1000Gi")
	require.NoError(t, e.st.Create(e.ctx, newRS("web", 300)))
	_, err := e.rs.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "web"})
	require.NoError(t, err)
	assert.Len(t, e.vmisOf("web"), BurstReplicas)
	_, err = e.rs.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "web"})
	require.NoError(t, err)
	assert.Len(t, e.vmisOf("web"), 300)
}

func TestReplicaSetDeletionDeletesVMIs(t *testing.T) {
	e := newEnv(t, 2)
	require.NoError(t, e.st.Create(e.ctx, newRS("web", 2)))
	e.settle()
	require.NoError(t, e.st.Delete(e.ctx, e.getRS("web"), store.DeleteOptions{}))
	_, err := e.rs.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "web"})
	require.NoError(t, err)
	e.settle()
	assert.Empty(t, e.vmisOf("web"))
}

func TestReplicaSetBadSelectorIsTerminal(t *testing.T) {
	e := newEnv(t, 1)
	rs := newRS("web", 1)
	rs.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}
	require.NoError(t, e.st.Create(e.ctx, rs))
	_, err := e.rs.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "web"})
	require.True(t, reconcile.IsTerminal(err))
	assert.Contains(t, err.Error(), "spec.selector")
}

func TestCreatedVMIsAreDefaulted(t *testing.T) {
	e := newEnv(t, 2)
	require.NoError(t, e.st.Create(e.ctx, newRS("web", 2)))
	require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyAlways)))
	e.settle()
	vmis := e.vmisOf("web")
	require.Len(t, vmis, 2)
	uuids := map[string]bool{}
	for _, v := range append(vmis, *e.getVMI("vm")) {
		require.NotNil(t, v.Spec.Domain.Machine, v.Name)
		assert.Equal(t, virtkit.DefaultMachineType, v.Spec.Domain.Machine.Type, v.Name)
		require.NotNil(t, v.Spec.Domain.Firmware, v.Name)
		assert.NotEmpty(t, v.Spec.Domain.Firmware.UUID, v.Name)
		uuids[string(v.Spec.Domain.Firmware.UUID)] = true
	}
	assert.Len(t, uuids, 3, "every VMI has its own firmware UUID")
	assert.Equal(t, virtkit.FirmwareUUIDForVM("vm"), e.getVMI("vm").Spec.Domain.Firmware.UUID)

	// A spec change outside the template bumps the generation; the
	// defaulted VMI still matches its undefaulted template.
	vm := e.getVM("vm")
	rs := virtkit.RunStrategyRerunOnFailure
	vm.Spec.RunStrategy = &rs
	require.NoError(t, e.st.Update(e.ctx, vm))
	e.settle()
	vm = e.getVM("vm")
	require.EqualValues(t, 2, vm.Generation)
	assert.Nil(t, virtkit.GetCondition(vm.Status.Conditions, virtkit.VirtualMachineRestartRequired))
}
