package virtctl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/term"
)

// CancelMigration deletes the unfinished migration of the VM's instance and
// returns its name; NotFound when there is none, an error saying why when
// the migration is past the point where it can be aborted.
func CancelMigration(ctx context.Context, c *kube.Client, vm string) (string, error) {
	ri := c.Dynamic.Resource(MigrationsGVR).Namespace(c.Namespace)
	list, err := ri.List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	for _, m := range list.Items {
		vmi := nestedString(m.Object, "spec", "vmiName")
		phase := nestedString(m.Object, "status", "phase")
		if vmi != vm || phase == "Succeeded" || phase == "Failed" || m.GetDeletionTimestamp() != nil {
			continue
		}
		if ended := nestedString(m.Object, "status", "migrationState", "endTimestamp"); ended != "" {
			if failed, _, _ := unstructured.NestedBool(m.Object, "status", "migrationState", "failed"); failed {
				return "", fmt.Errorf("migration %s of VM %s cannot be cancelled: it has already failed", m.GetName(), vm)
			}
			// Past the switchover: the guest is on the target already and
			// no abort can bring it back.
			return "", fmt.Errorf("migration %s of VM %s cannot be cancelled: the guest has been moved to the target node, which is taking it over", m.GetName(), vm)
		}
		if err := ri.Delete(ctx, m.GetName(), metav1.DeleteOptions{}); err != nil {
			return "", err
		}
		return m.GetName(), nil
	}
	return "", apierrors.NewNotFound(MigrationsGVR.GroupResource(), "active migration of "+vm)
}

// nestedString is the string at path in obj, "" when there is none.
func nestedString(obj map[string]any, path ...string) string {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = m[p]
	}
	s, _ := cur.(string)
	return s
}

// vmSetToRun checks that the VM exists (NotFound otherwise) and is not
// Halted.
func vmSetToRun(ctx context.Context, c *kube.Client, name string) error {
	vm, err := c.Dynamic.Resource(vmsGVR).Namespace(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if nestedString(vm.Object, "spec", "runStrategy") == "Halted" {
		return fmt.Errorf("VirtualMachine %s is not set to run", name)
	}
	return nil
}

// subresourcePut calls PUT …/namespaces/NS/RESOURCE/NAME/SUB with body.
func subresourcePut(ctx context.Context, c *kube.Client, resource, name, sub string, body any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	_, err = kube.DoRaw(ctx, c.REST.Put().AbsPath(SubresourcesPath, "namespaces", c.Namespace, resource, name, sub).
		SetHeader("Content-Type", "application/json").Body(data))
	return err
}

// maxGuestInfo bounds a guest-information reply.
const maxGuestInfo = 4 << 20

// guestInfo prints a guest-information subresource's JSON, indented.
func guestInfo(ctx context.Context, c *kube.Client, w io.Writer, resource, name, sub string) error {
	raw, err := kube.DoRaw(ctx, c.REST.Get().AbsPath(SubresourcesPath, "namespaces", c.Namespace, resource, name, sub))
	if err != nil {
		return err
	}
	if len(raw) > maxGuestInfo {
		return fmt.Errorf("%s: reply larger than %d bytes", sub, maxGuestInfo)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return fmt.Errorf("%s: the server's reply is not JSON: %w", sub, err)
	}
	out.WriteByte('\n')
	_, err = w.Write(term.EscapeJSON(out.Bytes()))
	return err
}
