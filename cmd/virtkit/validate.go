package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/admission"
)

// validateFinding is one line of validate's output: an accepted object or
// one problem.
type validateFinding struct {
	OK        bool   `json:"ok"`
	File      string `json:"file"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Field     string `json:"field,omitempty"`
	Type      string `json:"type,omitempty"`
	Message   string `json:"message,omitempty"`
}

func (f validateFinding) String() string {
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

func newValidateCmd() *cobra.Command {
	var files []string
	var output string
	var recursive, noCommon bool
	cmd := &cobra.Command{
		Use:   "validate -f PATH... [--output text|json]",
		Short: "Decode, default and validate KubeVirt manifests",
		Long: `validate reads every manifest in PATH (a file, a directory of .yaml, .yml and
.json files, or "-" for stdin), decodes it strictly, applies KubeVirt's
defaults and runs KubeVirt's admission rules: the admission chain of the
library's Apply and of the API server, in the same order.

The admission rules for a user's create apply too: reserved kubevirt.io/
labels are refused (a status in a manifest is ignored, as on create).

A VirtualMachine's spec.instancetype and spec.preference are resolved
against the instance types and preferences in the given paths and
KubeVirt's common catalogue (u1.small, fedora, ...; leave it out with
--no-common-instancetypes), and the VM is expanded as KubeVirt's admission
does: a missing one is NotFound, a template field the instance type also
sets is Invalid at its path, an unmet preference requirement is Invalid at
spec.instancetype or the template's CPU or memory, and a field virtkit
cannot honour is NotSupported.

It prints "OK <Kind> <namespace>/<name>" for every good object and one line
"<Kind> <namespace>/<name>: <field path>: <type>: <message>" per problem,
and exits with status 1 if there was any problem. An input without any
object (empty, only comments, only empty Lists) is a problem of type Empty.
Control characters and bidirectional-text overrides in names and messages
are printed escaped (\x1b, \u202e). Extra arguments after the flags are
paths too.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			paths := append(slices.Clone(files), args...)
			if len(paths) == 0 {
				return errors.New("validate: no input; pass -f PATH")
			}
			if output != "text" && output != "json" {
				return fmt.Errorf("validate: --output %q: must be text or json", output)
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			findings := validatePaths(ctx, cmd.InOrStdin(), paths, recursive, !noCommon)
			if err := printFindings(cmd.OutOrStdout(), output, findings); err != nil {
				return err
			}
			for _, f := range findings {
				if !f.OK {
					return exitError{1}
				}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&files, "filename", "f", nil, `manifest file or directory, "-" for stdin (repeatable)`)
	fl.StringVarP(&output, "output", "o", "text", "output format: text or json")
	fl.BoolVarP(&recursive, "recursive", "R", false, "descend into subdirectories")
	fl.BoolVar(&noCommon, "no-common-instancetypes", false, "resolve instance types and preferences from the given paths only")
	return cmd
}

func printFindings(w io.Writer, output string, findings []validateFinding) error {
	if output == "json" {
		if findings == nil {
			findings = []validateFinding{}
		}
		enc := json.NewEncoder(jsonEscaper{W: w})
		enc.SetIndent("", "  ")
		return enc.Encode(findings)
	}
	for _, f := range findings {
		if _, err := fmt.Fprintln(w, esc(f.String())); err != nil {
			return err
		}
	}
	return nil
}

// decoded is one manifest stream's objects and decode problems.
type decoded struct {
	file     string
	objs     []virtkit.Object
	findings []validateFinding
}

// validatePaths expands directories and validates every file, in order;
// instance types and preferences are resolved across all of them (and
// KubeVirt's common catalogue when common is set).
func validatePaths(ctx context.Context, stdin io.Reader, paths []string, recursive, common bool) []validateFinding {
	var streams []decoded
	for _, p := range paths {
		if p == "-" {
			streams = append(streams, decodeStream("-", stdin))
			continue
		}
		files, err := manifestFiles(p, recursive)
		if err != nil {
			streams = append(streams, decoded{file: p, findings: []validateFinding{{File: p, Kind: "File", Name: p, Type: "InvalidManifest", Message: err.Error()}}})
			continue
		}
		for _, file := range files {
			f, err := os.Open(file)
			if err != nil {
				streams = append(streams, decoded{file: file, findings: []validateFinding{{File: file, Kind: "File", Name: file, Type: "InvalidManifest", Message: err.Error()}}})
				continue
			}
			streams = append(streams, decodeStream(file, f))
			_ = f.Close()
		}
	}
	res, err := newInstancetypeResolver(ctx, streams, common)
	var out []validateFinding
	if err != nil {
		out = append(out, validateFinding{Kind: "Catalogue", Name: "common-instancetypes", Type: "InternalError", Message: err.Error()})
	}
	for _, s := range streams {
		out = append(out, s.findings...)
		out = append(out, checkObjects(ctx, s.file, s.objs, res)...)
	}
	return out
}

func manifestFiles(path string, recursive bool) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != path && !recursive {
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			files = append(files, p)
		}
		return nil
	})
	slices.Sort(files)
	return files, err
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
		d.findings = append(d.findings, validateFinding{File: file, Kind: "File", Name: file, Type: "Empty",
			Message: "no objects: the input is empty or holds only comments or empty Lists"})
	}
	return d
}

// checkObjects runs the admission chain of a user's create (the one
// cluster.Apply and the API server run: defaults, validation, admission)
// on decoded objects; a VM's instance type and preference are inferred,
// resolved and checked against res (nil: not at all).
func checkObjects(ctx context.Context, file string, objs []virtkit.Object, res *instancetypeResolver) []validateFinding {
	opts := admission.Options{}
	if res != nil {
		opts.Lookup = res.lookup()
	}
	chain := admission.New(opts)
	var out []validateFinding
	for _, obj := range objs {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		base := validateFinding{File: file, Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
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
			f.Field, f.Type, f.Message = e.Field, fieldErrorKind(e.Type), e.ErrorBody()
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

func decodeFinding(file string, err error) validateFinding {
	f := validateFinding{File: file, Kind: "Document", Type: "InvalidManifest", Message: err.Error()}
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

// fieldErrorKind is the short name of a field error type (Required,
// Invalid, NotSupported, Duplicate, Forbidden, NotFound, TooLong, TooMany).
func fieldErrorKind(t field.ErrorType) string {
	s := string(t)
	if k, ok := strings.CutPrefix(s, "FieldValue"); ok {
		return k
	}
	return s
}
