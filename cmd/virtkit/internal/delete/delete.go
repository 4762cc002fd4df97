package delete

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/term"
)

// ErrReported: Run reported failures through Options.Report (through the
// API every failure is reported and the other objects are still deleted).
var ErrReported = errors.New("delete: failures reported")

// ErrNoTransport: Run was called without an API client.
var ErrNoTransport = errors.New("delete: Options.API is not set")

// Options are the delete command's. Main sets the flags' fields, the
// transport (UseAPI, then API or Store once connected) and, for -f, the
// objects of the manifests; Complete, Validate and Run do the rest.
type Options struct {
	// Out receives "KIND/NAME deleted" lines; ErrOut what Report writes.
	Out, ErrOut io.Writer
	// Kind and Names are what the user typed (Complete sets them).
	Kind  string
	Names []string
	// Namespace of the objects (through the API, main sets the context's
	// unless -n was given).
	Namespace string
	// Files are -f's manifests (API only); main reads their objects into
	// Objects after Validate.
	Files   []string
	Objects []*unstructured.Unstructured
	// Cascade is --cascade: background, foreground or orphan (kubectl's
	// true and false too); empty leaves the store's default.
	Cascade string
	// API is the connection to the API server.
	API *kube.Client
	// Report writes a failure kubectl-style; nil writes its message.
	Report func(w io.Writer, err error)

	policy *metav1.DeletionPropagation
}

// ParseCascade maps --cascade to a propagation policy, as kubectl does
// (including its deprecated true = background and false = orphan).
func ParseCascade(v string) (metav1.DeletionPropagation, error) {
	switch strings.ToLower(v) {
	case "background", "true":
		return metav1.DeletePropagationBackground, nil
	case "foreground":
		return metav1.DeletePropagationForeground, nil
	case "orphan", "false":
		return metav1.DeletePropagationOrphan, nil
	}
	return "", fmt.Errorf("--cascade: %q: want background, foreground or orphan", v)
}

// Complete takes KIND NAME... from args and the propagation policy from
// Cascade.
func (o *Options) Complete(args []string) error {
	if o.Cascade != "" {
		p, err := ParseCascade(o.Cascade)
		if err != nil {
			return err
		}
		o.policy = &p
	}
	if len(args) > 0 {
		o.Kind, o.Names = args[0], args[1:]
	}
	if o.Report == nil {
		o.Report = func(w io.Writer, err error) { fmt.Fprintln(w, term.EscLines(err.Error())) }
	}
	return nil
}

// Validate checks the options.
func (o *Options) Validate() error {
	switch {
	case len(o.Files) > 0 && o.Kind != "":
		return errors.New("give either -f or KIND NAME..., not both")
	case len(o.Files) == 0 && len(o.Names) == 0:
		return errors.New("give KIND NAME... or -f FILE")
	}
	return nil
}

// Run deletes the objects through the API.
func (o *Options) Run(ctx context.Context) error {
	if o.API == nil {
		return ErrNoTransport
	}
	return o.runAPI(ctx)
}

// target is one object to delete through the API.
type target struct {
	mapping   *meta.RESTMapping
	namespace string
	name      string
}

// runAPI deletes the targets and reports each kubectl-style; NotFound is
// an error, as with kubectl.
func (o *Options) runAPI(ctx context.Context) error {
	c := o.API
	var targets []target
	if len(o.Objects) > 0 {
		for _, u := range o.Objects {
			gvk := u.GroupVersionKind()
			m, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return err
			}
			targets = append(targets, target{mapping: m, namespace: kube.NamespaceOf(m, u, o.Namespace), name: u.GetName()})
		}
	} else {
		m, err := c.Mapping(o.Kind)
		if err != nil {
			return err
		}
		for _, name := range o.Names {
			targets = append(targets, target{mapping: m, namespace: o.Namespace, name: name})
		}
	}
	opts := metav1.DeleteOptions{PropagationPolicy: o.policy}
	failed := false
	for _, t := range targets {
		if err := c.ResourceFor(t.mapping, t.namespace).Delete(ctx, t.name, opts); err != nil {
			o.Report(o.ErrOut, err)
			failed = true
			continue
		}
		fmt.Fprintf(o.Out, "%s %q deleted\n", kube.KindRef(t.mapping.GroupVersionKind.GroupKind()), term.Esc(t.name))
	}
	if failed {
		return ErrReported
	}
	return nil
}
