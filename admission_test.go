package virtkit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestAdmitCreateDropsStatus(t *testing.T) {
	vmi := validVMI(t)
	vmi.Status = VirtualMachineInstanceStatus{Phase: Scheduled, NodeName: "n1"}
	assert.Empty(t, AdmitCreate(vmi))
	assert.Equal(t, VirtualMachineInstanceStatus{}, vmi.Status, "a user cannot place a VMI through its status")

	vm := &VirtualMachine{Status: VirtualMachineStatus{PrintableStatus: "Running", Ready: true}}
	assert.Empty(t, AdmitCreate(vm))
	assert.Equal(t, VirtualMachineStatus{}, vm.Status)

	mig := &VirtualMachineInstanceMigration{Status: VirtualMachineInstanceMigrationStatus{Phase: MigrationSucceeded}}
	assert.Empty(t, AdmitCreate(mig))
	assert.Empty(t, mig.Status.Phase)

	rs := &VirtualMachineInstanceReplicaSet{Status: VirtualMachineInstanceReplicaSetStatus{Replicas: 3}}
	assert.Empty(t, AdmitCreate(rs))
	assert.Zero(t, rs.Status.Replicas)

	dv := &DataVolume{Status: DataVolumeStatus{Phase: "Succeeded"}}
	assert.Empty(t, AdmitCreate(dv))
	assert.Empty(t, dv.Status.Phase)

	// Kubernetes lets a node register with its status.
	n := &Node{Status: NodeStatus{Hypervisor: "sim"}}
	assert.Empty(t, AdmitCreate(n))
	assert.Equal(t, "sim", n.Status.Hypervisor)
}

func TestAdmitCreateReservedMetadata(t *testing.T) {
	vmi := validVMI(t)
	vmi.Labels = map[string]string{NodeNameLabel: "n1", "app": "ok", CreatedByLabel: "x"}
	vmi.Annotations = map[string]string{IgnitionAnnotation: "{}", "kubevirt.io/allow-pod-bridge-network-live-migration": ""}
	assertFieldErrors(t, AdmitCreate(vmi), []wantFieldError{
		{"metadata.labels[kubevirt.io/nodeName]", field.ErrorTypeForbidden},
		{"metadata.labels[kubevirt.io/created-by]", field.ErrorTypeForbidden},
		{"metadata.annotations[kubevirt.io/ignitiondata]", field.ErrorTypeForbidden},
	})

	for _, l := range ReservedLabels() {
		vm := &VirtualMachine{Spec: VirtualMachineSpec{Template: &VirtualMachineInstanceTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{l: "v"}},
		}}}
		assertFieldErrors(t, AdmitCreate(vm), []wantFieldError{{"spec.template.metadata.labels[" + l + "]", field.ErrorTypeForbidden}})
	}
	rs := &VirtualMachineInstanceReplicaSet{Spec: VirtualMachineInstanceReplicaSetSpec{Template: &VirtualMachineInstanceTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{HookSidecarsAnnotation: "[]"}},
	}}}
	assertFieldErrors(t, AdmitCreate(rs), []wantFieldError{{"spec.template.metadata.annotations[hooks.kubevirt.io/hookSidecars]", field.ErrorTypeForbidden}})
}

func TestAdmitUpdateVMISpecImmutable(t *testing.T) {
	old := validVMI(t)
	old.Labels = map[string]string{NodeNameLabel: "n1"}
	old.Status = VirtualMachineInstanceStatus{Phase: Running, NodeName: "n1"}

	same := validVMI(t)
	same.Labels = map[string]string{"team": "a"}
	same.Annotations = map[string]string{"note": "b"}
	same.Status = VirtualMachineInstanceStatus{Phase: Scheduled, NodeName: "evil"}
	assert.Empty(t, AdmitUpdate(same, old), "labels and annotations may change")
	assert.Equal(t, old.Status, same.Status, "status comes from the stored object")
	assert.Equal(t, map[string]string{"team": "a", NodeNameLabel: "n1"}, same.Labels, "reserved labels are kept")

	bigger := validVMI(t)
	bigger.Spec.Domain.Memory.Guest = ptrTo(resource.MustParse("2Gi"))
	bigger.Spec.NodeSelector = map[string]string{"x": "y"}
	assertFieldErrors(t, AdmitUpdate(bigger, old), []wantFieldError{
		{"spec.domain.memory.guest", field.ErrorTypeForbidden},
		{"spec.nodeSelector[x]", field.ErrorTypeForbidden},
	})

	// Semantically equal quantities are no change.
	equal := validVMI(t)
	g := *old.Spec.Domain.Memory.Guest
	equal.Spec.Domain.Memory.Guest = ptrTo(resource.MustParse(g.String()))
	equal.Spec.Domain.Memory.Guest.Format = resource.DecimalSI
	assert.Empty(t, AdmitUpdate(equal, old))

	moved := validVMI(t)
	moved.Labels = map[string]string{NodeNameLabel: "n2"}
	assertFieldErrors(t, AdmitUpdate(moved, old), []wantFieldError{{"metadata.labels[kubevirt.io/nodeName]", field.ErrorTypeForbidden}})

	added := validVMI(t)
	added.Labels = map[string]string{MigrationTargetNodeNameLabel: "n2"}
	assertFieldErrors(t, AdmitUpdate(added, old), []wantFieldError{{"metadata.labels[kubevirt.io/migrationTargetNodeName]", field.ErrorTypeForbidden}})

	assertFieldErrors(t, AdmitUpdate(&VirtualMachine{}, old), []wantFieldError{{"kind", field.ErrorTypeInvalid}})
}

func TestAdmitUpdateManyChangesBounded(t *testing.T) {
	old := validVMI(t)
	next := validVMI(t)
	next.Spec.NodeSelector = map[string]string{}
	for i := range 40 {
		next.Spec.NodeSelector[string(rune('a'+i%26))+string(rune('a'+i/26))] = "v"
	}
	errs := AdmitUpdate(next, old)
	require.Len(t, errs, maxSpecDiffs+1)
	assert.Equal(t, "spec", errs[maxSpecDiffs].Field)
}

func TestAdmitUpdateMigration(t *testing.T) {
	old := &VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{MigrationSelectorLabel: "a"}},
		Spec:       VirtualMachineInstanceMigrationSpec{VMIName: "a"},
		Status:     VirtualMachineInstanceMigrationStatus{Phase: MigrationRunning},
	}
	next := old.DeepCopy()
	next.Status = VirtualMachineInstanceMigrationStatus{Phase: MigrationSucceeded}
	assert.Empty(t, AdmitUpdate(next, old))
	assert.Equal(t, MigrationRunning, next.Status.Phase)

	next = old.DeepCopy()
	next.Spec.VMIName = "b"
	next.Labels[MigrationSelectorLabel] = "b"
	assertFieldErrors(t, AdmitUpdate(next, old), []wantFieldError{
		{"spec.vmiName", field.ErrorTypeForbidden},
		{"metadata.labels[kubevirt.io/vmi-name]", field.ErrorTypeForbidden},
	})
}

func TestAdmitUpdateVMKeepsStatusAllowsSpec(t *testing.T) {
	old := &VirtualMachine{Status: VirtualMachineStatus{PrintableStatus: "Stopped"}}
	next := &VirtualMachine{
		Spec:   VirtualMachineSpec{RunStrategy: ptrTo(RunStrategyAlways)},
		Status: VirtualMachineStatus{PrintableStatus: "Running"},
	}
	assert.Empty(t, AdmitUpdate(next, old))
	assert.Equal(t, VirtualMachineStatusStopped, next.Status.PrintableStatus)
}

func TestValidateNodeNameIsDNSLabel(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []wantFieldError
	}{
		{"n1", nil},
		{"x\x1b[31m", []wantFieldError{{"metadata.name", field.ErrorTypeInvalid}}},
		{"host.example.com", []wantFieldError{{"metadata.name", field.ErrorTypeInvalid}}},
		{"bell\a", []wantFieldError{{"metadata.name", field.ErrorTypeInvalid}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertFieldErrors(t, Validate(&Node{ObjectMeta: metav1.ObjectMeta{Name: tc.name}}), tc.want)
		})
	}
}
