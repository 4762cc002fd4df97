package corev1

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// Launcher pod labels and names, as KubeVirt's virt-launcher pods carry
// them.
const (
	// LauncherPodPrefix starts the name of every launcher pod.
	LauncherPodPrefix = "virt-launcher-"
	// LauncherLabelValue is the value of the kubevirt.io label of a
	// launcher pod.
	LauncherLabelValue = "virt-launcher"
	// VMNameLabel names the VMI on its launcher pod.
	VMNameLabel = "vm.kubevirt.io/name"
	// ComputeContainer is the launcher pod's container that runs the
	// guest.
	ComputeContainer = "compute"
	// launcherSuffixLen is the length of the suffix of a launcher pod's
	// name (generateName's five characters in KubeVirt).
	launcherSuffixLen = 5
)

// podREST serves pods as a read-only view of the VMIs: virtkit runs no
// pods, and each VMI a node runs (or is starting, or is stopping after a
// delete) is shown as the virt-launcher pod KubeVirt would run for it,
// with a second pod on the target node while a migration runs. Clients
// that read pods see what they would on KubeVirt: kubectl get pods lists
// the launchers on their nodes, and kubectl drain finds the launchers of
// the node it drains and evicts them through pods/eviction (see
// evictionREST), which applies the VMI's eviction strategy as KubeVirt's
// eviction admission does.
type podREST struct {
	*view
}

func newPodREST(st store.Store, clk clock.PassiveClock) *podREST {
	r := &podREST{view: &view{
		st: st, resource: "pods", singular: "pod", shortNames: []string{"po"}, namespaced: true,
		newObj:        func() runtime.Object { return &corev1.Pod{} },
		newList:       func() runtime.Object { return &corev1.PodList{} },
		newSource:     func() virtkit.Object { return &virtkit.VirtualMachineInstance{} },
		newSourceList: func() virtkit.ObjectList { return &virtkit.VirtualMachineInstanceList{} },
		expand: func(o virtkit.Object) []runtime.Object {
			var out []runtime.Object
			for _, p := range LauncherPods(o.(*virtkit.VirtualMachineInstance)) {
				out = append(out, p)
			}
			return out
		},
		fields: func(obj runtime.Object) fields.Set {
			p := obj.(*corev1.Pod)
			return fields.Set{
				"spec.nodeName": p.Spec.NodeName, "spec.restartPolicy": string(p.Spec.RestartPolicy),
				"spec.schedulerName": p.Spec.SchedulerName, "spec.serviceAccountName": p.Spec.ServiceAccountName,
				"spec.hostNetwork": "false", "status.phase": string(p.Status.Phase),
				"status.podIP": p.Status.PodIP, "status.nominatedNodeName": p.Status.NominatedNodeName,
			}
		},
		TableConvertor: table{clock: clk, columns: podColumns()},
	}}
	r.view.withHistory(st)
	return r
}

// Get implements rest.Getter: the launcher pod of that name, if its VMI
// has one.
func (r *podREST) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	pod, _, err := r.pod(ctx, name)
	if err != nil {
		return nil, err
	}
	return pod, nil
}

// pod returns the launcher pod called name and its VMI.
func (r *podREST) pod(ctx context.Context, name string) (*corev1.Pod, *virtkit.VirtualMachineInstance, error) {
	vmiName, ok := launcherVMI(name)
	if !ok {
		return nil, nil, apiError(store.ErrNotFound, r.groupResource(), name)
	}
	vmi := &virtkit.VirtualMachineInstance{}
	if err := r.st.Get(ctx, store.Key{Namespace: r.namespace(ctx), Name: vmiName}, vmi); err != nil {
		return nil, nil, apiError(err, r.groupResource(), name)
	}
	for _, p := range LauncherPods(vmi) {
		if p.Name == name {
			return p, vmi, nil
		}
	}
	return nil, nil, apiError(store.ErrNotFound, r.groupResource(), name)
}

// launcherVMI is the name of the VMI a launcher pod's name belongs to.
func launcherVMI(pod string) (string, bool) {
	rest, ok := strings.CutPrefix(pod, LauncherPodPrefix)
	if !ok || len(rest) < launcherSuffixLen+2 || rest[len(rest)-launcherSuffixLen-1] != '-' {
		return "", false
	}
	return rest[:len(rest)-launcherSuffixLen-1], true
}

// LauncherPodName is the name of the launcher pod of the VMI with that
// name and uid on node: virt-launcher-<vmi>-<suffix>, the suffix five
// characters of generateName's alphabet derived from the uid and the
// node, so it is stable for the life of the VMI on that node.
func LauncherPodName(vmi string, uid types.UID, node string) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789" // generateName's
	sum := sha256.Sum256([]byte(string(uid) + "/" + node))
	b := make([]byte, launcherSuffixLen)
	for i := range b {
		b[i] = alphabet[int(sum[i])%len(alphabet)]
	}
	return LauncherPodPrefix + vmi + "-" + string(b)
}

// LauncherPods is the read-only pod view of a VMI: the virt-launcher pod
// on status.nodeName, and while a migration runs the target's on
// status.migrationState.targetNode. A VMI not yet placed has none, and a
// final VMI has none unless it is being deleted (its pod is shown
// Terminating until the VMI is gone). Only what clients read is filled
// in: labels, the VMI as controller, the node, the phase, a compute
// container and its readiness, the pod IP.
func LauncherPods(vmi *virtkit.VirtualMachineInstance) []*corev1.Pod {
	node := vmi.Status.NodeName
	if node == "" || (vmi.IsFinal() && vmi.DeletionTimestamp == nil) {
		return nil
	}
	out := []*corev1.Pod{launcherPod(vmi, node, vmi.CreationTimestamp, vmi.Status.Phase, vmi.IsReady())}
	if ms := vmi.Status.MigrationState; ms != nil && ms.TargetNode != "" && ms.TargetNode != node && !ms.Completed && !ms.Failed && !vmi.IsFinal() {
		created := vmi.CreationTimestamp
		if ms.StartTimestamp != nil {
			created = *ms.StartTimestamp
		}
		phase := virtkit.Scheduled // the target's launcher runs, its domain waits for the guest
		out = append(out, launcherPod(vmi, ms.TargetNode, created, phase, false))
	}
	return out
}

// launcherUID is the uid of a launcher pod: a name-based (version 5
// style) UUID of the VMI's uid and the node, stable for the life of the
// VMI on that node and different for a new VMI of the same name.
func launcherUID(vmi types.UID, node string) types.UID {
	sum := sha256.Sum256([]byte("pod/" + string(vmi) + "/" + node))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x50
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return types.UID(h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:])
}

func launcherPod(vmi *virtkit.VirtualMachineInstance, node string, created metav1.Time, phase virtkit.VirtualMachineInstancePhase, ready bool) *corev1.Pod {
	labels := map[string]string{}
	for k, v := range vmi.Labels {
		labels[k] = v
	}
	labels[virtkit.AppLabel] = LauncherLabelValue
	labels[virtkit.CreatedByLabel] = string(vmi.UID)
	labels[VMNameLabel] = vmi.Name
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: LauncherPodName(vmi.Name, vmi.UID, node), Namespace: vmi.Namespace,
			UID:             launcherUID(vmi.UID, node),
			ResourceVersion: vmi.ResourceVersion, CreationTimestamp: created,
			DeletionTimestamp: vmi.DeletionTimestamp.DeepCopy(),
			Labels:            labels,
			Annotations:       map[string]string{"kubevirt.io/domain": vmi.Name, "kubectl.kubernetes.io/default-container": ComputeContainer},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance,
				Name: vmi.Name, UID: vmi.UID, Controller: new(true), BlockOwnerDeletion: new(true)}},
		},
		Spec: corev1.PodSpec{
			NodeName:      node,
			Containers:    []corev1.Container{{Name: ComputeContainer}},
			RestartPolicy: corev1.RestartPolicyNever, SchedulerName: corev1.DefaultSchedulerName,
		},
	}
	s := &p.Status
	cs := corev1.ContainerStatus{Name: ComputeContainer}
	switch phase {
	case virtkit.Pending, virtkit.Scheduling, "":
		s.Phase = corev1.PodPending
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
	case virtkit.Scheduled, virtkit.Running:
		s.Phase = corev1.PodRunning
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: created}
		cs.Started = new(true)
		cs.Ready = ready
	case virtkit.Succeeded:
		s.Phase = corev1.PodSucceeded
		cs.State.Terminated = &corev1.ContainerStateTerminated{Reason: "Completed"}
	case virtkit.Failed:
		s.Phase = corev1.PodFailed
		cs.State.Terminated = &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}
	default:
		s.Phase = corev1.PodUnknown
	}
	s.ContainerStatuses = []corev1.ContainerStatus{cs}
	cond := corev1.ConditionFalse
	if cs.Ready {
		cond = corev1.ConditionTrue
	}
	s.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		{Type: corev1.ContainersReady, Status: cond},
		{Type: corev1.PodReady, Status: cond},
	}
	if s.Phase == corev1.PodRunning {
		s.StartTime = created.DeepCopy()
		if node == vmi.Status.NodeName {
			for _, i := range vmi.Status.Interfaces {
				if i.IP != "" {
					s.PodIP = i.IP
					for _, ip := range i.IPs {
						s.PodIPs = append(s.PodIPs, corev1.PodIP{IP: ip})
					}
					break
				}
			}
		}
	}
	return p
}

// podColumns are kube-apiserver's pod columns, the wide ones (IP, node,
// nominated node, readiness gates) at priority 1.
func podColumns() []column {
	pod := func(obj runtime.Object) *corev1.Pod { return obj.(*corev1.Pod) }
	str := func(name string, priority int32, f func(*corev1.Pod) string) column {
		return column{def: metav1.TableColumnDefinition{Name: name, Type: "string", Priority: priority},
			cell: func(obj runtime.Object, _ time.Time) any { return f(pod(obj)) }}
	}
	none := func(s string) string {
		if s == "" {
			return "<none>"
		}
		return s
	}
	return []column{
		nameColumn(),
		str("Ready", 0, func(p *corev1.Pod) string {
			ready := 0
			for _, c := range p.Status.ContainerStatuses {
				if c.Ready {
					ready++
				}
			}
			return strconv.Itoa(ready) + "/" + strconv.Itoa(len(p.Spec.Containers))
		}),
		str("Status", 0, podStatus),
		intColumn("Restarts", func(runtime.Object) int { return 0 }),
		ageColumn(),
		str("IP", 1, func(p *corev1.Pod) string { return none(p.Status.PodIP) }),
		str("Node", 1, func(p *corev1.Pod) string { return none(p.Spec.NodeName) }),
		str("Nominated Node", 1, func(p *corev1.Pod) string { return none(p.Status.NominatedNodeName) }),
		str("Readiness Gates", 1, func(*corev1.Pod) string { return "<none>" }),
	}
}

// podStatus is kubectl's STATUS of a pod: Terminating while deleted, else
// the container's waiting or terminated reason, else the phase.
func podStatus(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "Terminating"
	}
	for _, c := range p.Status.ContainerStatuses {
		switch {
		case c.State.Waiting != nil && c.State.Waiting.Reason != "":
			return c.State.Waiting.Reason
		case c.State.Terminated != nil && c.State.Terminated.Reason != "":
			return c.State.Terminated.Reason
		}
	}
	return string(p.Status.Phase)
}
