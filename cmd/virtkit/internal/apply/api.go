package apply

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/jsonmergepatch"
	"k8s.io/client-go/dynamic"

	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/term"
)

// LastAppliedAnnotation holds the manifest apply last sent, as kubectl
// keeps it, so that a field removed from the manifest is removed from the
// object while fields the server defaulted stay.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// runAPI creates each object or updates the existing one's spec, labels
// and annotations, and reports "created", "configured" (the server stored
// a change) or "unchanged" (it kept the resourceVersion). Failures are
// reported kubectl-style and the others are still applied.
func (o *Options) runAPI(ctx context.Context) error {
	failed := false
	for _, obj := range o.Objects {
		if err := o.applyOne(ctx, obj); err != nil {
			o.Report(o.ErrOut, err)
			failed = true
			if ctx.Err() != nil {
				break
			}
		}
	}
	if failed {
		return ErrReported
	}
	return nil
}

// applyOne creates u or patches the existing object.
func (o *Options) applyOne(ctx context.Context, u *unstructured.Unstructured) error {
	c := o.API
	u = u.DeepCopy()
	gvk := u.GroupVersionKind()
	m, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("%s: %w", gvk, err)
	}
	ns := kube.NamespaceOf(m, u, o.Namespace)
	if ns != "" {
		u.SetNamespace(ns)
	}
	unstructured.RemoveNestedField(u.Object, "status")
	modified, err := withLastApplied(u)
	if err != nil {
		return err
	}
	ri := c.ResourceFor(m, ns)
	ref := kube.KindRef(gvk.GroupKind()) + "/" + term.Esc(u.GetName())
	// Another client may create or delete the object between the get and
	// the write: the get is taken again, a few times at most.
	for attempt := 1; ; attempt++ {
		done, err := o.applyAttempt(ctx, ri, ref, modified, u.GetName())
		if done || attempt == applyAttempts ||
			!(apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err)) {
			return err
		}
	}
}

// applyAttempts is how many times applyOne reads the object again after
// losing a race with another client's create or delete.
const applyAttempts = 3

// applyAttempt creates the object or patches the existing one; done is
// false with a NotFound or AlreadyExists error that a new read may mend.
func (o *Options) applyAttempt(ctx context.Context, ri dynamic.ResourceInterface, ref string, modified map[string]any, name string) (done bool, err error) {
	w := o.Out
	existing, err := ri.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if _, err := ri.Create(ctx, &unstructured.Unstructured{Object: modified}, metav1.CreateOptions{FieldManager: "virtkit"}); err != nil {
			return false, err
		}
		fmt.Fprintf(w, "%s created\n", ref)
		return true, nil
	}
	if err != nil {
		return true, err
	}
	original := []byte(existing.GetAnnotations()[LastAppliedAnnotation])
	modifiedJSON, err := json.Marshal(modified)
	if err != nil {
		return true, err
	}
	current, err := json.Marshal(existing.Object)
	if err != nil {
		return true, err
	}
	patch, err := jsonmergepatch.CreateThreeWayJSONMergePatch(original, modifiedJSON, current)
	if err != nil {
		return true, fmt.Errorf("%s: %w", ref, err)
	}
	if string(patch) == "{}" {
		fmt.Fprintf(w, "%s unchanged\n", ref)
		return true, nil
	}
	updated, err := ri.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "virtkit"})
	if err != nil {
		return false, err
	}
	verb := "configured"
	if updated.GetResourceVersion() == existing.GetResourceVersion() {
		verb = "unchanged"
	}
	fmt.Fprintf(w, "%s %s\n", ref, verb)
	return true, nil
}

// withLastApplied returns the manifest with the last-applied annotation
// holding itself (without that annotation), as kubectl records it.
func withLastApplied(u *unstructured.Unstructured) (map[string]any, error) {
	clean := u.DeepCopy()
	ann := clean.GetAnnotations()
	delete(ann, LastAppliedAnnotation)
	if len(ann) == 0 {
		unstructured.RemoveNestedField(clean.Object, "metadata", "annotations")
	} else {
		clean.SetAnnotations(ann)
	}
	data, err := json.Marshal(clean.Object)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u.GetName(), err)
	}
	out := clean.DeepCopy()
	ann = out.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[LastAppliedAnnotation] = string(data)
	out.SetAnnotations(ann)
	return out.Object, nil
}
