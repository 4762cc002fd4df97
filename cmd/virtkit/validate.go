package main

import (
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
	var recursive bool
	cmd := &cobra.Command{
		Use:   "validate -f PATH... [--output text|json]",
		Short: "Decode, default and validate KubeVirt manifests",
		Long: `validate reads every manifest in PATH (a file, a directory of .yaml, .yml and
.json files, or "-" for stdin), decodes it strictly, applies KubeVirt's
defaults and runs KubeVirt's admission rules.

The admission rules for a user's create apply too: reserved kubevirt.io/
labels are refused (a status in a manifest is ignored, as on create).

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
			findings := validatePaths(cmd.InOrStdin(), paths, recursive)
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
	return cmd
}

func printFindings(w io.Writer, output string, findings []validateFinding) error {
	if output == "json" {
		if findings == nil {
			findings = []validateFinding{}
		}
		enc := json.NewEncoder(jsonEscaper{w})
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

// validatePaths expands directories and validates every file, in order.
func validatePaths(stdin io.Reader, paths []string, recursive bool) []validateFinding {
	var out []validateFinding
	for _, p := range paths {
		if p == "-" {
			out = append(out, validateStream("-", stdin)...)
			continue
		}
		files, err := manifestFiles(p, recursive)
		if err != nil {
			out = append(out, validateFinding{File: p, Kind: "File", Name: p, Type: "InvalidManifest", Message: err.Error()})
			continue
		}
		for _, file := range files {
			f, err := os.Open(file)
			if err != nil {
				out = append(out, validateFinding{File: file, Kind: "File", Name: file, Type: "InvalidManifest", Message: err.Error()})
				continue
			}
			out = append(out, validateStream(file, f)...)
			_ = f.Close()
		}
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

// validateStream decodes, defaults, validates and admits (as a create by a
// user) one manifest stream. A stream without any object (an empty file,
// only comments, only empty Lists) is a problem: whoever validates a file
// expects it to hold manifests, as `kubectl apply` refuses "no objects".
func validateStream(file string, r io.Reader) []validateFinding {
	objs, err := virtkit.Decode(r)
	var out []validateFinding
	for _, e := range flattenErrors(err) {
		out = append(out, decodeFinding(file, e))
	}
	if len(objs) == 0 && err == nil {
		out = append(out, validateFinding{File: file, Kind: "File", Name: file, Type: "Empty",
			Message: "no objects: the input is empty or holds only comments or empty Lists"})
	}
	for _, obj := range objs {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		base := validateFinding{File: file, Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
		if base.Name == "" {
			base.Name = obj.GetGenerateName()
		}
		virtkit.SetDefaults(obj)
		errs := virtkit.Validate(obj)
		errs = append(errs, virtkit.AdmitCreate(obj)...)
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
