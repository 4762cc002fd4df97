package simulation

import (
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
)

// Namespace is where the simulation puts its objects.
const Namespace = "sim"

// appLabel marks the simulation's guests (the MigrationPolicy selects on it).
const appLabel = "sim.virtkit.io/app"

func template(app string) *virtkit.VirtualMachineInstanceTemplateSpec {
	mem := resource.MustParse("128Mi")
	return &virtkit.VirtualMachineInstanceTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{appLabel: app}},
		Spec:       virtkit.VirtualMachineInstanceSpec{Domain: virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: &mem}}},
	}
}

// graceOf is the grace period apply-vm's n picks.
func graceOf(n int) *int64 {
	g := gracePeriods[(n/4)%len(gracePeriods)]
	return &g
}

func newVM(name string, rs virtkit.VirtualMachineRunStrategy, rev int, grace *int64) *virtkit.VirtualMachine {
	t := template(name)
	t.Spec.TerminationGracePeriodSeconds = grace
	t.ObjectMeta.Annotations = map[string]string{"sim.virtkit.io/rev": strconv.Itoa(rev)}
	return &virtkit.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachine},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Spec:       virtkit.VirtualMachineSpec{RunStrategy: &rs, Template: t},
	}
}

func newVMI(name string) *virtkit.VirtualMachineInstance {
	t := template(name)
	return &virtkit.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: t.ObjectMeta.Labels},
		Spec:       t.Spec,
	}
}

func newReplicaSet(name string, replicas int32) *virtkit.VirtualMachineInstanceReplicaSet {
	return &virtkit.VirtualMachineInstanceReplicaSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstanceReplicaSet},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Spec: virtkit.VirtualMachineInstanceReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{appLabel: name}},
			Template: template(name),
		},
	}
}

func newMigrationPolicy(name string, postCopy bool, bandwidth string) *virtkit.MigrationPolicy {
	bw := resource.MustParse(bandwidth)
	return &virtkit.MigrationPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.MigrationsSchemeGroupVersion.String(), Kind: virtkit.KindMigrationPolicy},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: virtkit.MigrationPolicySpec{
			Selectors:             &virtkit.Selectors{VirtualMachineInstanceSelector: virtkit.LabelSelectorMap{appLabel: "vm-0"}},
			AllowPostCopy:         &postCopy,
			BandwidthPerMigration: &bw,
		},
	}
}
