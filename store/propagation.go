package store

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The finalizers a propagation policy puts on a deleted owner, as the
// Kubernetes API server does; a garbage collector removes them once the
// dependents are orphaned (orphan) or gone (foregroundDeletion).
const (
	FinalizerOrphanDependents = metav1.FinalizerOrphanDependents
	FinalizerDeleteDependents = metav1.FinalizerDeleteDependents
)

// Validate reports an unknown propagation policy, naming the field.
func (o DeleteOptions) Validate() error {
	if o.PropagationPolicy == nil {
		return nil
	}
	switch p := *o.PropagationPolicy; p {
	case metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan:
		return nil
	default:
		return fmt.Errorf("%w: propagationPolicy: %q is not one of Background, Foreground, Orphan", ErrInvalid, p)
	}
}

// propagationFinalizers returns the finalizers of an object deleted with
// policy (nil keeps them as they are; Background drops the orphan and
// foregroundDeletion finalizers; Orphan and Foreground put theirs in place
// of the other's) and whether they changed. It never modifies fins.
func propagationFinalizers(fins []string, policy *metav1.DeletionPropagation) ([]string, bool) {
	if policy == nil {
		return fins, false
	}
	var want string
	switch *policy {
	case metav1.DeletePropagationOrphan:
		want = FinalizerOrphanDependents
	case metav1.DeletePropagationForeground:
		want = FinalizerDeleteDependents
	}
	out := make([]string, 0, len(fins)+1)
	changed := false
	for _, f := range fins {
		if (f == FinalizerOrphanDependents || f == FinalizerDeleteDependents) && f != want {
			changed = true
			continue
		}
		out = append(out, f)
	}
	if want != "" && !slices.Contains(out, want) {
		out = append(out, want)
		changed = true
	}
	return out, changed
}
