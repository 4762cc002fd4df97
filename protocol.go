package virtkit

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The protocol between virtkit's controllers and its node agents: the
// annotations, finalizers and taints both sides read and write on the
// objects (package controller's documentation describes the exchange).
const (
	// NodeAgentFinalizer is the node agent's finalizer on a VMI it runs.
	NodeAgentFinalizer = "virtkit.io/node-agent"
	// PauseRequestAnnotation on a VMI: "true" pause, "false" unpause.
	PauseRequestAnnotation = "virtkit.io/pause-request"
	// SoftRebootRequestAnnotation on a VMI: a token; the agent reboots the
	// guest once and removes the annotation.
	SoftRebootRequestAnnotation = "virtkit.io/soft-reboot-request"
	// DrainTaintKey is the NoSchedule taint that, with spec.unschedulable,
	// marks a node for evacuation (KubeVirt's nodeDrainTaintKey default).
	DrainTaintKey = "kubevirt.io/drain"
)

// FenceTimeoutAnnotation is the Node annotation in which a node agent
// publishes its fence timeout (a Go duration, e.g. "1m0s"): the agent
// destroys its own guests once it has not renewed its heartbeat in the
// store for that long. The node-health reconciler reads it to wait at least
// [MinNodeGrace] before it fails the node's VMIs.
const FenceTimeoutAnnotation = "virtkit.io/fence-timeout"

// MinNodeGrace is the shortest time after the last heartbeat change of a
// node whose agent fences after fence before its VMIs may be restarted
// elsewhere: fence plus a margin of fence/2. The margin covers the agent's
// check interval, its destroy calls, and a heartbeat write that was still
// under way when the controller saw it. A controller's
// monitor grace plus unresponsive grace should be at least this; where it
// is shorter the node-health reconciler waits this long anyway.
func MinNodeGrace(fence time.Duration) time.Duration {
	if fence <= 0 {
		return 0
	}
	return fence + fence/2
}

// ParseFenceTimeout reads a [FenceTimeoutAnnotation] value: a positive Go
// duration.
func ParseFenceTimeout(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %q: %w", FenceTimeoutAnnotation, v, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%s: %q: not positive", FenceTimeoutAnnotation, v)
	}
	return d, nil
}

// Trace propagation between components. A VM start's or a migration's spans
// come from different reconcilers and node agents, possibly in different
// processes, so the root span's context travels on the objects themselves
// as a W3C traceparent annotation: the VM reconciler puts it on the VMI it
// creates, the migration reconciler on the migration (and, at hand-off, on
// the VMI for the source node's migration engine). Components that find it
// make their spans children of it. The annotations are written only when a
// TracerProvider is set.
const (
	// TraceParentAnnotation on a VMI or a migration: the W3C traceparent
	// of its root span.
	TraceParentAnnotation = "virtkit.io/traceparent"
	// MigrationTraceParentAnnotation on a VMI: the traceparent of its
	// current migration's root span.
	MigrationTraceParentAnnotation = "virtkit.io/migration-traceparent"
)

// MigrationUnsupportedAnnotation on a Node says that its agent cannot take
// part in live migrations, and why (a libvirt node started without a
// migration URI, say). The node
// agent sets it at start-up; the migration controller never picks such a
// node as a target and fails a migration whose source it is, with the
// reason in status.migrationState.failureReason.
const MigrationUnsupportedAnnotation = "virtkit.io/migration-unsupported"

// MigrationReasonNodeUnsupported starts the failure reason of a migration
// whose source node, or every possible target, cannot take part in
// migrations.
const MigrationReasonNodeUnsupported = "node cannot take part in migrations"

// NamespaceFinalizer is Kubernetes' namespace finalizer ("kubernetes"): a
// namespace keeps it in spec.finalizers until its content is deleted. The
// store's graceful deletion keys on metadata.finalizers, so a namespace
// carries it there too (see [NewNamespace]); the namespace controller
// removes both.
const NamespaceFinalizer = string(corev1.FinalizerKubernetes)

// SystemNamespaces are the namespaces kube-apiserver creates at start and
// never deletes: default, kube-system and kube-public.
func SystemNamespaces() []string {
	return []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic}
}
