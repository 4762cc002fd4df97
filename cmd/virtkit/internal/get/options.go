package get

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube"
)

// ErrNoTransport: Run was called without an API client.
var ErrNoTransport = errors.New("get: Options.API is not set")

// Options are the get command's: KIND [NAME], where to look and how to
// print. Main sets the flags' fields and, once connected, API; Complete,
// Validate and Run do the rest.
type Options struct {
	// Out receives the output.
	Out io.Writer
	// Kind and Name are what the user typed (Complete sets them from the
	// arguments); Name empty lists the kind.
	Kind, Name string
	// Namespace of the objects (main sets the context's unless -n was
	// given); AllNamespaces lists every namespace.
	Namespace     string
	AllNamespaces bool
	// Output is the format: table (or empty), wide, name, json, yaml or
	// jsonpath=TEMPLATE.
	Output string
	// Selector selects by label; Watch keeps printing changes.
	Selector string
	Watch    bool
	// API is the connection to the API server.
	API *kube.Client
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
	if o.Output == "table" {
		o.Output = ""
	}
	return nil
}

// Validate checks the options.
func (o *Options) Validate() error {
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

// Run prints the objects through the API.
func (o *Options) Run(ctx context.Context) error {
	if o.API == nil {
		return ErrNoTransport
	}
	return o.runAPI(ctx)
}
