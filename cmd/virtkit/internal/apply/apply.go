package apply

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/term"
	"github.com/virtkit/virtkit/store"
)

// ErrReported: Run reported failures through Options.Report (through the
// API every failure is reported and the other objects are still applied).
var ErrReported = errors.New("apply: failures reported")

// ErrNoTransport: Run was called with neither an API client nor a store.
var ErrNoTransport = errors.New("apply: neither Options.API nor Options.Store is set")

// Options are the apply command's. Main sets the flags' fields and the
// transport (UseAPI, then API or Store once connected) and, after
// Validate, reads the manifests of Files into Objects (API) or
// StoreObjects (store); Complete, Validate and Run do the rest.
type Options struct {
	// Out receives "KIND/NAME created" lines; ErrOut what Report writes.
	Out, ErrOut io.Writer
	// Files are -f's manifests: files, directories or - (standard input).
	Files []string
	// Namespace is where objects without one go through the API (main
	// sets the context's unless -n was given); NamespaceSet says -n was
	// given, which a store refuses (there a manifest's namespace, else
	// default, is used).
	Namespace    string
	NamespaceSet bool
	// Objects are the manifests' objects for the API, as the server will
	// decode them; StoreObjects the decoded objects for a store.
	Objects      []*unstructured.Unstructured
	StoreObjects []virtkit.Object
	// UseAPI says which transport Run will have: API when set, else Store.
	UseAPI bool
	API    *kube.Client
	Store  store.Store
	// Report writes a failure kubectl-style; nil writes its message.
	Report func(w io.Writer, err error)
}

// Complete takes the arguments (apply takes none) and sets the defaults.
func (o *Options) Complete(args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unknown command %q: apply takes its manifests from -f", args[0])
	}
	if o.Report == nil {
		o.Report = func(w io.Writer, err error) { fmt.Fprintln(w, term.EscLines(err.Error())) }
	}
	return nil
}

// Validate checks the options for the transport.
func (o *Options) Validate() error {
	if len(o.Files) == 0 {
		return errors.New("-f: required (a file, a directory or - for standard input)")
	}
	if !o.UseAPI && o.NamespaceSet {
		return errors.New("-n: needs the API (a kubeconfig); with --store a manifest's namespace, else default, is used")
	}
	return nil
}

// Run applies the objects through the transport.
func (o *Options) Run(ctx context.Context) error {
	switch {
	case o.UseAPI && o.API != nil:
		return o.runAPI(ctx)
	case !o.UseAPI && o.Store != nil:
		return o.runStore(ctx)
	}
	return ErrNoTransport
}

// runStore applies StoreObjects one by one and reports each kubectl-style
// ("virtualmachine/vm1 created"). An object that fails is not reported
// and the rest are still applied; the returned error joins every failure.
func (o *Options) runStore(ctx context.Context) error {
	var errs []error
	for _, obj := range o.StoreObjects {
		gvk, _ := virtkit.GVKOf(obj)
		ns := obj.GetNamespace()
		if ns == "" && virtkit.IsNamespaced(gvk) {
			ns = "default"
		}
		existing, err := virtkit.NewObject(gvk)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		verb := "configured"
		if err := o.Store.Get(ctx, store.Key{Namespace: ns, Name: obj.GetName()}, existing); errors.Is(err, store.ErrNotFound) {
			verb = "created"
		} else if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := cluster.ApplyOne(ctx, o.Store, obj); err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		fmt.Fprintf(o.Out, "%s/%s %s\n", strings.ToLower(gvk.Kind), obj.GetName(), verb)
	}
	return errors.Join(errs...)
}
