package corev1

import (
	"context"
	"errors"
	goruntime "runtime"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// nodeREST serves core v1 Nodes as views of virtkit's Nodes
// (virtkit.io/v1alpha1). Updates (and patches) may change
// spec.unschedulable, spec.taints, labels and annotations; they are
// written to the virtkit Node, so kubectl cordon and uncordon cordon the
// node for virtkit's scheduler. Uncordoning also ends a virtkit drain (its
// kubevirt.io/drain taint goes), as controller.Uncordon does.
type nodeREST struct {
	*view
}

var _ rest.Updater = (*nodeREST)(nil)

func newNodeREST(st store.Store, clk clock.PassiveClock) *nodeREST {
	v := &view{
		st: st, resource: "nodes", singular: "node", shortNames: []string{"no"},
		newObj:        func() runtime.Object { return &corev1.Node{} },
		newList:       func() runtime.Object { return &corev1.NodeList{} },
		newSource:     func() virtkit.Object { return &virtkit.Node{} },
		newSourceList: func() virtkit.ObjectList { return &virtkit.NodeList{} },
		convert:       func(o virtkit.Object) runtime.Object { return CoreNode(o.(*virtkit.Node)) },
		fields: func(obj runtime.Object) fields.Set {
			if obj.(*corev1.Node).Spec.Unschedulable {
				return fields.Set{"spec.unschedulable": "true"}
			}
			return fields.Set{"spec.unschedulable": "false"}
		},
		TableConvertor: table{clock: clk, columns: []column{nameColumn(),
			{def: metav1.TableColumnDefinition{Name: "Status", Type: "string"}, cell: func(obj runtime.Object, _ time.Time) any {
				return nodeStatus(obj.(*corev1.Node))
			}},
			{def: metav1.TableColumnDefinition{Name: "Roles", Type: "string"}, cell: func(runtime.Object, time.Time) any { return "<none>" }},
			ageColumn(),
			{def: metav1.TableColumnDefinition{Name: "Version", Type: "string"}, cell: func(obj runtime.Object, _ time.Time) any {
				return obj.(*corev1.Node).Status.NodeInfo.KubeletVersion
			}},
		}},
	}
	return &nodeREST{view: v.withHistory(st)}
}

// nodeStatus is kubectl's STATUS of a node: Ready or NotReady, then
// SchedulingDisabled when cordoned.
func nodeStatus(n *corev1.Node) string {
	s := "Unknown"
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			s = "NotReady"
			if c.Status == corev1.ConditionTrue {
				s = "Ready"
			}
		}
	}
	if n.Spec.Unschedulable {
		s += ",SchedulingDisabled"
	}
	return s
}

// nodeVersion is the kubelet version a node reports: virtkit's agent.
const nodeVersion = "virtkit"

// CoreNode is the core v1 view of a virtkit Node: spec.unschedulable and
// taints, status conditions (Ready with the agent's heartbeat), capacity,
// allocatable, a Hostname address and nodeInfo (the host UUID, the
// hypervisor as container runtime).
func CoreNode(n *virtkit.Node) *corev1.Node {
	out := &corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: *n.ObjectMeta.DeepCopy(),
		Spec:       corev1.NodeSpec{Unschedulable: n.Spec.Unschedulable},
	}
	for _, t := range n.Spec.Taints {
		out.Spec.Taints = append(out.Spec.Taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect), TimeAdded: t.TimeAdded.DeepCopy()})
	}
	s := &out.Status
	s.Capacity = resources(n.Status.Capacity)
	s.Allocatable = resources(n.Status.Allocatable)
	for _, c := range n.Status.Conditions {
		nc := corev1.NodeCondition{Type: corev1.NodeConditionType(c.Type), Status: corev1.ConditionStatus(c.Status),
			LastHeartbeatTime: c.LastProbeTime, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message}
		if hb := n.Status.LastHeartbeatTime; hb != nil {
			nc.LastHeartbeatTime = *hb
		}
		s.Conditions = append(s.Conditions, nc)
	}
	hostname := n.Name
	if h := n.Labels[virtkit.HostnameLabel]; h != "" {
		hostname = h
	}
	s.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: hostname}}
	arch := n.Labels[corev1.LabelArchStable]
	if arch == "" {
		arch = goruntime.GOARCH
	}
	s.NodeInfo = corev1.NodeSystemInfo{
		MachineID: n.Status.HostUUID, SystemUUID: n.Status.HostUUID,
		KubeletVersion: nodeVersion, ContainerRuntimeVersion: n.Status.Hypervisor,
		OperatingSystem: "linux", Architecture: arch,
	}
	return out
}

func resources(in virtkit.ResourceList) corev1.ResourceList {
	if in == nil {
		return nil
	}
	out := make(corev1.ResourceList, len(in))
	for k, v := range in {
		out[corev1.ResourceName(k)] = v.DeepCopy()
	}
	return out
}

// errNodeField is the error of an update of a node field virtkit's Node
// does not hold.
var errNodeField = errors.New("only spec.unschedulable, spec.taints, labels and annotations of a node can be changed")

// Update implements rest.Updater: it applies the changed object's
// spec.unschedulable, taints, labels and annotations to the virtkit Node,
// retrying when an agent's heartbeat wrote the Node meanwhile. Other changes are refused naming the
// field; status is the agent's and is ignored.
func (r *nodeREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	gr := r.groupResource()
	for range 10 {
		src := &virtkit.Node{}
		if err := r.st.Get(ctx, store.Key{Name: name}, src); err != nil {
			return nil, false, apiError(err, gr, name)
		}
		old := CoreNode(src)
		obj, err := objInfo.UpdatedObject(ctx, old)
		if err != nil {
			return nil, false, err
		}
		n, ok := obj.(*corev1.Node)
		if !ok {
			return nil, false, apierrors.NewBadRequest("not a Node")
		}
		if errs := validateNodeUpdate(n, old); len(errs) > 0 {
			return nil, false, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Node").GroupKind(), name, errs)
		}
		if updateValidation != nil {
			if err := updateValidation(ctx, n, old); err != nil {
				return nil, false, err
			}
		}
		// A client's stale resourceVersion is a conflict; a write that
		// raced with ours (a heartbeat) is retried on the new state, where
		// a stale object is then refused here.
		if n.ResourceVersion != "" && n.ResourceVersion != src.ResourceVersion {
			return nil, false, apierrors.NewConflict(gr, name, errPrecondition("ResourceVersion", n.ResourceVersion, src.ResourceVersion))
		}
		applyNode(src, n)
		if options != nil && len(options.DryRun) > 0 {
			return CoreNode(src), false, nil
		}
		err = r.st.Update(ctx, src)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, false, apiError(err, gr, name)
		}
		return CoreNode(src), false, nil
	}
	return nil, false, apierrors.NewConflict(gr, name, errors.New("the node kept changing; retry"))
}

// applyNode writes the changeable fields of n to the virtkit Node.
func applyNode(src *virtkit.Node, n *corev1.Node) {
	uncordon := src.Spec.Unschedulable && !n.Spec.Unschedulable
	src.Spec.Unschedulable = n.Spec.Unschedulable
	src.Spec.Taints = nil
	for _, t := range n.Spec.Taints {
		if uncordon && t.Key == virtkit.DrainTaintKey && t.Effect == corev1.TaintEffectNoSchedule {
			continue
		}
		src.Spec.Taints = append(src.Spec.Taints, virtkit.Taint{Key: t.Key, Value: t.Value, Effect: virtkit.TaintEffect(t.Effect), TimeAdded: t.TimeAdded.DeepCopy()})
	}
	src.Labels = n.Labels
	src.Annotations = n.Annotations
	src.Finalizers = n.Finalizers
}

// validateNodeUpdate refuses changes virtkit's Node cannot hold.
func validateNodeUpdate(n, old *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	cmp := n.Spec.DeepCopy()
	cmp.Unschedulable, cmp.Taints = old.Spec.Unschedulable, old.Spec.Taints
	if !equality.Semantic.DeepEqual(*cmp, old.Spec) {
		errs = append(errs, field.Forbidden(spec, errNodeField.Error()))
	}
	for i, t := range n.Spec.Taints {
		p := spec.Child("taints").Index(i)
		if t.Key == "" {
			errs = append(errs, field.Required(p.Child("key"), ""))
		}
		if !slices.Contains([]corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}, t.Effect) {
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}))
		}
	}
	if n.Name != old.Name {
		errs = append(errs, field.Invalid(metadataPath.Child("name"), n.Name, "field is immutable"))
	}
	return errs
}
