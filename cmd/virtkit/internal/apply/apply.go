package apply

import (
	"context"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/term"
)

// ErrReported: Run reported failures through Options.Report (through the
// API every failure is reported and the other objects are still applied).
var ErrReported = errors.New("apply: failures reported")

// ErrNoTransport: Run was called without an API client.
var ErrNoTransport = errors.New("apply: Options.API is not set")

// Options are the apply command's. Main sets the flags' fields and the
// connection (API) and, after Validate, reads the manifests of Files into
// Objects; Complete, Validate and Run do the rest.
type Options struct {
	// Out receives "KIND/NAME created" lines; ErrOut what Report writes.
	Out, ErrOut io.Writer
	// Files are -f's manifests: files, directories or - (standard input).
	Files []string
	// Namespace is where objects without one go (main sets the context's
	// unless -n was given).
	Namespace string
	// Objects are the manifests' objects, as the server will decode them.
	Objects []*unstructured.Unstructured
	// API is the connection to the API server.
	API *kube.Client
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

// Validate checks the options.
func (o *Options) Validate() error {
	if len(o.Files) == 0 {
		return errors.New("-f: required (a file, a directory or - for standard input)")
	}
	return nil
}

// Run applies the objects through the API.
func (o *Options) Run(ctx context.Context) error {
	if o.API == nil {
		return ErrNoTransport
	}
	return o.runAPI(ctx)
}
