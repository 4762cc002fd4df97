package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/jsonmergepatch"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube"
)

// lastAppliedAnnotation holds the manifest apply last sent, as kubectl
// keeps it, so that a field removed from the manifest is removed from the
// object while fields the server defaulted stay.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// readManifests reads the objects of files, directories (their .yaml, .yml
// and .json files) and "-" (standard input) as the server will decode them,
// without local defaulting; a List contributes its items.
func readManifests(stdin io.Reader, paths []string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	read := func(name string, r io.Reader) error {
		data, err := io.ReadAll(io.LimitReader(r, virtkit.MaxManifestBytes+1))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if len(data) > virtkit.MaxManifestBytes {
			return fmt.Errorf("%s: larger than %d bytes", name, virtkit.MaxManifestBytes)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for doc := 0; ; doc++ {
			var m map[string]any
			if err := dec.Decode(&m); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return fmt.Errorf("%s: document %d: %w", name, doc, err)
			}
			if len(m) == 0 {
				continue
			}
			u := &unstructured.Unstructured{Object: m}
			if u.IsList() {
				list, err := u.ToList()
				if err != nil {
					return fmt.Errorf("%s: document %d: %w", name, doc, err)
				}
				for i := range list.Items {
					out = append(out, &list.Items[i])
				}
				continue
			}
			if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
				return fmt.Errorf("%s: document %d: apiVersion, kind and metadata.name are required", name, doc)
			}
			out = append(out, u)
		}
	}
	for _, p := range paths {
		if p == "-" {
			if err := read("<stdin>", stdin); err != nil {
				return nil, err
			}
			continue
		}
		files, err := manifestFiles(p, false)
		if err != nil {
			return nil, err
		}
		for _, file := range files {
			f, err := os.Open(file)
			if err != nil {
				return nil, err
			}
			err = read(file, f)
			f.Close()
			if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// namespaceOf is kube.NamespaceOf.
func namespaceOf(m *meta.RESTMapping, u *unstructured.Unstructured, fallback string) string {
	return kube.NamespaceOf(m, u, fallback)
}

// runApplyAPI creates each object or updates the existing one's spec,
// labels and annotations, and reports "created", "configured" (the server
// stored a change) or "unchanged" (it kept the resourceVersion). Failures
// are reported kubectl-style and the others are still applied.
func runApplyAPI(ctx context.Context, c *apiClient, w, errw io.Writer, objs []*unstructured.Unstructured) error {
	failed := false
	for _, obj := range objs {
		if err := applyOneAPI(ctx, c, w, obj); err != nil {
			reportErr(errw, err)
			failed = true
			if ctx.Err() != nil {
				break
			}
		}
	}
	if failed {
		return errReported
	}
	return nil
}

func applyOneAPI(ctx context.Context, c *apiClient, w io.Writer, u *unstructured.Unstructured) error {
	u = u.DeepCopy()
	gvk := u.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("%s: %w", gvk, err)
	}
	ns := namespaceOf(m, u, c.namespace)
	if ns != "" {
		u.SetNamespace(ns)
	}
	unstructured.RemoveNestedField(u.Object, "status")
	modified, err := withLastApplied(u)
	if err != nil {
		return err
	}
	ri := c.resourceFor(m, ns)
	ref := kindRef(gvk.GroupKind()) + "/" + esc(u.GetName())
	existing, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if _, err := ri.Create(ctx, &unstructured.Unstructured{Object: modified}, metav1.CreateOptions{FieldManager: "virtkit"}); err != nil {
			return err
		}
		fmt.Fprintf(w, "%s created\n", ref)
		return nil
	}
	if err != nil {
		return err
	}
	original := []byte(existing.GetAnnotations()[lastAppliedAnnotation])
	modifiedJSON, err := json.Marshal(modified)
	if err != nil {
		return err
	}
	current, err := json.Marshal(existing.Object)
	if err != nil {
		return err
	}
	patch, err := jsonmergepatch.CreateThreeWayJSONMergePatch(original, modifiedJSON, current)
	if err != nil {
		return fmt.Errorf("%s: %w", ref, err)
	}
	if string(patch) == "{}" {
		fmt.Fprintf(w, "%s unchanged\n", ref)
		return nil
	}
	updated, err := ri.Patch(ctx, u.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "virtkit"})
	if err != nil {
		return err
	}
	verb := "configured"
	if updated.GetResourceVersion() == existing.GetResourceVersion() {
		verb = "unchanged"
	}
	fmt.Fprintf(w, "%s %s\n", ref, verb)
	return nil
}

// withLastApplied returns the manifest with the last-applied annotation
// holding itself (without that annotation), as kubectl records it.
func withLastApplied(u *unstructured.Unstructured) (map[string]any, error) {
	clean := u.DeepCopy()
	ann := clean.GetAnnotations()
	delete(ann, lastAppliedAnnotation)
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
	ann[lastAppliedAnnotation] = string(data)
	out.SetAnnotations(ann)
	return out.Object, nil
}

// applyAPICmd runs apply through the API.
func applyAPICmd(cmd *cobra.Command, kf *kubeFlags, files []string) error {
	objs, err := readManifests(cmd.InOrStdin(), files)
	if err != nil {
		return apiFail(cmd, err)
	}
	c, err := kf.connect(cmd)
	if err != nil {
		return apiFail(cmd, err)
	}
	return runApplyAPI(cmd.Context(), c, cmd.OutOrStdout(), cmd.ErrOrStderr(), objs)
}
