package get

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube"
	"github.com/virtkit/virtkit/store"
)

// ErrNoTransport: Run was called with neither an API client nor a store.
var ErrNoTransport = errors.New("get: neither Options.API nor Options.Store is set")

// Options are the get command's: KIND [NAME], where to look and how to
// print. Main sets the flags' fields and the transport (UseAPI, then API
// or Store once connected); Complete, Validate and Run do the rest.
type Options struct {
	// Out receives the output.
	Out io.Writer
	// Kind and Name are what the user typed (Complete sets them from the
	// arguments); Name empty lists the kind.
	Kind, Name string
	// Namespace of the objects (through the API, main sets the context's
	// unless -n was given); AllNamespaces lists every namespace.
	Namespace     string
	AllNamespaces bool
	// Output is the format: table (or empty), wide, json or yaml, and
	// through the API also name or jsonpath=TEMPLATE.
	Output string
	// Selector selects by label; Watch keeps printing changes. API only.
	Selector string
	Watch    bool
	// UseAPI says which transport Run will have: API when set, else Store.
	UseAPI bool
	// API is the connection to the API server.
	API *kube.Client
	// Store is the store, when the command reads it directly.
	Store store.Store
	// Now is when ages are computed through a store; nil is time.Now.
	Now func() time.Time

	// resource is the kind through a store (Validate resolves it).
	resource Resource
}

// Complete takes KIND [NAME] from args and normalizes the output format.
func (o *Options) Complete(args []string) error {
	if len(args) < 1 || len(args) > 2 {
		return fmt.Errorf("accepts between 1 and 2 arg(s), received %d", len(args))
	}
	o.Kind = args[0]
	if len(args) == 2 {
		o.Name = args[1]
	}
	if o.UseAPI && o.Output == "table" {
		o.Output = ""
	}
	if !o.UseAPI && o.Output == "" {
		o.Output = "table"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return nil
}

// Validate checks the options for the transport.
func (o *Options) Validate() error {
	if o.UseAPI {
		switch {
		case o.Output == "" || o.Output == "wide" || o.Output == "name" || o.Output == "json" || o.Output == "yaml":
		case strings.HasPrefix(o.Output, "jsonpath="):
		default:
			return fmt.Errorf("--output: unable to match a printer suitable for the output format %q, allowed formats are: json,jsonpath,name,wide,yaml", o.Output)
		}
		if o.Name != "" && o.AllNamespaces {
			return errors.New("a resource cannot be retrieved by name across all namespaces")
		}
		return nil
	}
	if o.Selector != "" || o.Watch {
		return errors.New("-l, -w: need the API (a kubeconfig), not --store")
	}
	res, err := LookupResource(o.Kind)
	if err != nil {
		return err
	}
	o.resource = res
	if o.Output != "table" && o.Output != "wide" && o.Output != "json" && o.Output != "yaml" {
		return fmt.Errorf("--output: want table, wide, json or yaml, got %q", o.Output)
	}
	if o.Name != "" && o.AllNamespaces {
		return errors.New("-A: cannot be combined with a NAME")
	}
	return nil
}

// Run prints the objects through the transport.
func (o *Options) Run(ctx context.Context) error {
	switch {
	case o.UseAPI && o.API != nil:
		return o.runAPI(ctx)
	case !o.UseAPI && o.Store != nil:
		return o.runStore(ctx)
	}
	return ErrNoTransport
}
