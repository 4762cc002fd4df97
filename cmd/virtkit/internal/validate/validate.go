package validate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/admission"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/manifest"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/term"
)

// Finding is one line of validate's output: an accepted object or one
// problem.
type Finding struct {
	OK        bool   `json:"ok"`
	File      string `json:"file"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Field     string `json:"field,omitempty"`
	Type      string `json:"type,omitempty"`
	Message   string `json:"message,omitempty"`
}

func (f Finding) String() string {
	key := f.Name
	if f.Namespace != "" {
		key = f.Namespace + "/" + f.Name
	}
	if f.OK {
		return fmt.Sprintf("OK %s %s", f.Kind, key)
	}
	path := f.Field
	if path == "" {
		path = "-"
	}
	return fmt.Sprintf("%s %s: %s: %s: %s", f.Kind, key, path, f.Type, f.Message)
}

// ErrProblems: Run printed at least one problem (the command exits with
// status 1).
var ErrProblems = errors.New("validate: the manifests have problems")

// Options are validate's: the paths, how to print, and where stdin and
// the output are.
type Options struct {
	// In is what "-" reads; Out receives the findings.
	In  io.Reader
	Out io.Writer
	// Files are -f's paths (files, directories or "-"); Complete adds the
	// arguments.
	Files []string
	// Output is text (one line per finding) or json.
	Output string
	// Recursive descends into subdirectories.
	Recursive bool
	// NoCommon resolves instance types and preferences from the given
	// paths only, without KubeVirt's common catalogue.
	NoCommon bool

	paths []string
}

// Complete takes the paths: -f's, then the arguments.
func (o *Options) Complete(args []string) error {
	o.paths = append(slices.Clone(o.Files), args...)
	if o.Output == "" {
		o.Output = "text"
	}
	return nil
}

// Validate checks that there is input and the output format.
func (o *Options) Validate() error {
	if len(o.paths) == 0 {
		return errors.New("validate: no input; pass -f PATH")
	}
	if o.Output != "text" && o.Output != "json" {
		return fmt.Errorf("validate: --output %q: must be text or json", o.Output)
	}
	return nil
}

// Run validates every path and prints the findings; ErrProblems when any
// is a problem.
func (o *Options) Run(ctx context.Context) error {
	findings := validatePaths(ctx, o.In, o.paths, o.Recursive, !o.NoCommon)
	if err := printFindings(o.Out, o.Output, findings); err != nil {
		return err
	}
	for _, f := range findings {
		if !f.OK {
			return ErrProblems
		}
	}
	return nil
}

func printFindings(w io.Writer, output string, findings []Finding) error {
	if output == "json" {
		if findings == nil {
			findings = []Finding{}
		}
		enc := json.NewEncoder(term.JSONEscaper{W: w})
		enc.SetIndent("", "  ")
		return enc.Encode(findings)
	}
	for _, f := range findings {
		if _, err := fmt.Fprintln(w, term.Esc(f.String())); err != nil {
			return err
		}
	}
	return nil
}

// decoded is one manifest stream's objects and decode problems.
type decoded struct {
	file     string
	objs     []virtkit.Object
	findings []Finding
}

// validatePaths expands directories and validates every file, in order;
// instance types and preferences are resolved across all of them (and
// KubeVirt's common catalogue when common is set).
func validatePaths(ctx context.Context, stdin io.Reader, paths []string, recursive, common bool) []Finding {
	var streams []decoded
	for _, p := range paths {
		if p == "-" {
			streams = append(streams, decodeStream("-", stdin))
			continue
		}
		files, err := manifest.Files(p, recursive)
		if err != nil {
			streams = append(streams, decoded{file: p, findings: []Finding{{File: p, Kind: "File", Name: p, Type: "InvalidManifest", Message: err.Error()}}})
			continue
		}
		for _, file := range files {
			f, err := os.Open(file)
			if err != nil {
				streams = append(streams, decoded{file: file, findings: []Finding{{File: file, Kind: "File", Name: file, Type: "InvalidManifest", Message: err.Error()}}})
				continue
			}
			streams = append(streams, decodeStream(file, f))
			_ = f.Close()
		}
	}
	res, err := newInstancetypeResolver(ctx, streams, common)
	var out []Finding
	if err != nil {
		out = append(out, Finding{Kind: "Catalogue", Name: "common-instancetypes", Type: "InternalError", Message: err.Error()})
	}
	for _, s := range streams {
		out = append(out, s.findings...)
		out = append(out, checkObjects(ctx, s.file, s.objs, res)...)
	}
	return out
}

// decodeStream decodes one manifest stream. A stream without any object
// (an empty file, only comments, only empty Lists) is a problem: whoever
// validates a file expects it to hold manifests, as `kubectl apply`
// refuses "no objects".
func decodeStream(file string, r io.Reader) decoded {
	objs, err := virtkit.Decode(r)
	d := decoded{file: file, objs: objs}
	for _, e := range flattenErrors(err) {
		d.findings = append(d.findings, decodeFinding(file, e))
	}
	if len(objs) == 0 && err == nil {
		d.findings = append(d.findings, Finding{File: file, Kind: "File", Name: file, Type: "Empty",
			Message: "no objects: the input is empty or holds only comments or empty Lists"})
	}
	return d
}

// checkObjects runs the admission chain of a user's create (the one
// cluster.Apply and the API server run: defaults, validation, admission)
// on decoded objects; a VM's instance type and preference are inferred,
// resolved and checked against res (nil: not at all).
func checkObjects(ctx context.Context, file string, objs []virtkit.Object, res *instancetypeResolver) []Finding {
	opts := admission.Options{}
	if res != nil {
		opts.Lookup = res.lookup()
	}
	chain := admission.New(opts)
	var out []Finding
	for _, obj := range objs {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		base := Finding{File: file, Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
		if base.Name == "" {
			base.Name = obj.GetGenerateName()
		}
		// As apply does, an object without a namespace is admitted in
		// "default" (where the instance types and DataVolumes it names are
		// looked up); the finding shows the namespace the manifest gave.
		if obj.GetNamespace() == "" && virtkit.IsNamespaced(obj.GetObjectKind().GroupVersionKind()) {
			obj.SetNamespace("default")
		}
		var errs field.ErrorList
		if err := chain.Admit(ctx, admission.AttributesFor(admission.Create, obj, nil)); err != nil {
			if errs = admission.FieldErrors(err); errs == nil {
				errs = field.ErrorList{field.InternalError(nil, err)}
			}
		}
		if len(errs) == 0 {
			ok := base
			ok.OK = true
			out = append(out, ok)
			continue
		}
		for _, e := range errs {
			f := base
			f.Field, f.Type, f.Message = e.Field, FieldErrorKind(e.Type), e.ErrorBody()
			out = append(out, f)
		}
	}
	return out
}

func flattenErrors(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func decodeFinding(file string, err error) Finding {
	f := Finding{File: file, Kind: "Document", Type: "InvalidManifest", Message: err.Error()}
	var de *virtkit.DecodeError
	if !errors.As(err, &de) {
		f.Name = file
		return f
	}
	if de.Kind != "" {
		f.Kind = de.Kind
	}
	f.Namespace, f.Name, f.Field = de.Namespace, de.Name, de.Path
	if f.Name == "" {
		f.Name = fmt.Sprintf("%s[%d]", file, de.Document)
	}
	switch {
	case errors.Is(de, virtkit.ErrNotSupported):
		f.Type = "NotSupported"
	case errors.Is(de, virtkit.ErrUnknownField):
		f.Type = "UnknownField"
	case errors.Is(de, virtkit.ErrUnknownKind):
		f.Type = "UnknownKind"
	}
	f.Message = de.Err.Error()
	if de.Detail != "" {
		f.Message += ": " + de.Detail
	}
	return f
}

// FieldErrorKind is the short name of a field error type (Required,
// Invalid, NotSupported, Duplicate, Forbidden, NotFound, TooLong, TooMany).
func FieldErrorKind(t field.ErrorType) string {
	s := string(t)
	if k, ok := strings.CutPrefix(s, "FieldValue"); ok {
		return k
	}
	return s
}
