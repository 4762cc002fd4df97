package virtkit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// MaxManifestBytes bounds what Decode reads from one reader.
const MaxManifestBytes = 32 << 20

// DecodeError is one problem in one document of a manifest stream.
//
// +kubebuilder:object:generate=false
// +k8s:openapi-gen=false
type DecodeError struct {
	// Document is the 0-based index of the document among the non-empty
	// documents of the stream (YAML "---" documents or JSON values).
	Document int
	// Kind, Namespace and Name identify the object when they could be read.
	Kind, Namespace, Name string
	// Path is the dotted field path from the object root with [i] indexes
	// and [key] map keys, e.g. spec.template.spec.domain.devices.gpus; empty
	// when the problem is the document as a whole.
	Path string
	// Detail says what is wrong beyond the sentinel, may be empty.
	Detail string
	// Err is ErrUnknownField, ErrUnknownKind or ErrInvalidManifest; for a
	// field of KubeVirt's API that virtkit does not model it wraps both
	// ErrNotSupported and ErrUnknownField.
	Err error
}

func (e *DecodeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "document %d", e.Document)
	if e.Kind != "" {
		fmt.Fprintf(&b, " (%s %s)", e.Kind, objectKey(e.Namespace, e.Name))
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

func (e *DecodeError) Unwrap() error { return e.Err }

func objectKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// Decode reads a stream of manifests, multi-document YAML or JSON (one
// object, a stream of objects, or an array), and returns typed objects by
// apiVersion/kind. A kind "List" (apiVersion v1) contributes its items.
//
// Decoding is strict: an unknown kind, an unknown field, a duplicate key or
// a value of the wrong type is a *DecodeError naming the document and the
// field path. Every problem found is reported (errors.Join); the objects of
// documents without problems are still returned, in stream order.
func Decode(r io.Reader) ([]Object, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	if len(data) > MaxManifestBytes {
		return nil, fmt.Errorf("manifest larger than %d bytes: %w", MaxManifestBytes, ErrInvalidManifest)
	}
	d := newDecoder()
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	// YAML documents are converted strictly (a duplicate key is an error);
	// encoding/json keeps the last of duplicate keys, so JSON is checked.
	d.checkDuplicates = len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[')
	docs, err := splitDocuments(data)
	var errs []error
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs = append(errs, joined.Unwrap()...)
	} else if err != nil {
		errs = append(errs, err)
	}
	var objs []Object
	for i, doc := range docs {
		got, derrs := d.decodeDocument(i, doc)
		objs = append(objs, got...)
		errs = append(errs, derrs...)
	}
	slices.SortStableFunc(errs, func(a, b error) int { return documentOf(a) - documentOf(b) })
	return objs, errors.Join(errs...)
}

func documentOf(err error) int {
	var de *DecodeError
	if errors.As(err, &de) {
		return de.Document
	}
	return 0
}

// DecodeBytes is Decode over a byte slice.
func DecodeBytes(data []byte) ([]Object, error) { return Decode(bytes.NewReader(data)) }

// splitDocuments returns the non-empty documents of a YAML or JSON stream,
// each converted to JSON; a document that is not valid YAML is nil and
// reported in the error.
func splitDocuments(data []byte) ([][]byte, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return splitJSON(trimmed)
	}
	var docs [][]byte
	var errs []error
	yr := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := yr.Read()
		if errors.Is(err, io.EOF) {
			return docs, errors.Join(errs...)
		}
		if err != nil {
			errs = append(errs, &DecodeError{Document: len(docs), Err: ErrInvalidManifest, Detail: err.Error()})
			return docs, errors.Join(errs...)
		}
		if isEmptyYAML(doc) {
			continue
		}
		j, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			// Keep the document's place so later documents keep their
			// indexes and still decode.
			errs = append(errs, &DecodeError{Document: len(docs), Err: ErrInvalidManifest, Detail: err.Error()})
			docs = append(docs, nil)
			continue
		}
		if string(j) == "null" {
			continue
		}
		docs = append(docs, j)
	}
}

func isEmptyYAML(doc []byte) bool {
	for line := range bytes.Lines(doc) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' && !bytes.HasPrefix(line, []byte("---")) {
			return false
		}
	}
	return true
}

func splitJSON(data []byte) ([][]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var docs [][]byte
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, &DecodeError{Document: len(docs), Err: ErrInvalidManifest, Detail: err.Error()}
		}
		if len(raw) > 0 && raw[0] == '[' {
			var items []json.RawMessage
			if err := json.Unmarshal(raw, &items); err != nil {
				return docs, &DecodeError{Document: len(docs), Err: ErrInvalidManifest, Detail: err.Error()}
			}
			for _, it := range items {
				docs = append(docs, it)
			}
			continue
		}
		docs = append(docs, raw)
	}
}

// decoder holds per-call caches; nothing is shared between Decode calls.
//
// +kubebuilder:object:generate=false
// +k8s:openapi-gen=false
type decoder struct {
	fields          map[reflect.Type]map[string]structField
	checkDuplicates bool
}

// +kubebuilder:object:generate=false
// +k8s:openapi-gen=false
type structField struct {
	typ reflect.Type
}

func newDecoder() *decoder {
	return &decoder{fields: map[reflect.Type]map[string]structField{}}
}

func (d *decoder) decodeDocument(index int, doc []byte) ([]Object, []error) {
	if doc == nil {
		return nil, nil // reported while splitting
	}
	var generic any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		return nil, []error{&DecodeError{Document: index, Err: ErrInvalidManifest, Detail: err.Error()}}
	}
	if generic == nil {
		return nil, nil
	}
	m, ok := generic.(map[string]any)
	if !ok {
		return nil, []error{&DecodeError{Document: index, Err: ErrInvalidManifest, Detail: "a document must be an object"}}
	}
	if d.checkDuplicates {
		if errs := d.duplicateKeys(index, doc, m); len(errs) > 0 {
			return nil, errs
		}
	}
	return d.decodeObject(index, nil, m, doc)
}

// decodeObject decodes one object given as a generic map; raw is the same
// object as JSON when the caller has it (nil for List items).
func (d *decoder) decodeObject(index int, path *field.Path, m map[string]any, raw []byte) ([]Object, []error) {
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	derr := func(p *field.Path, err error, detail string) *DecodeError {
		e := &DecodeError{Document: index, Kind: kind, Err: err, Detail: detail}
		if p != nil {
			e.Path = p.String()
		}
		if md, ok := m["metadata"].(map[string]any); ok {
			e.Namespace, _ = md["namespace"].(string)
			e.Name, _ = md["name"].(string)
		}
		return e
	}
	if apiVersion == "" {
		return nil, []error{derr(path.Child("apiVersion"), ErrInvalidManifest, "apiVersion is required")}
	}
	if kind == "" {
		return nil, []error{derr(path.Child("kind"), ErrInvalidManifest, "kind is required")}
	}
	if kind == "List" && apiVersion == "v1" {
		return d.decodeList(index, path, m, derr)
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, []error{derr(path.Child("apiVersion"), ErrInvalidManifest, err.Error())}
	}
	gvk := servedVersion(gv).WithKind(kind)
	obj, err := NewObject(gvk)
	if err != nil {
		return nil, []error{derr(path.Child("kind"), ErrUnknownKind, fmt.Sprintf("%s is not a kind virtkit implements", gvk))}
	}
	var errs []*DecodeError
	d.check(m, reflect.TypeOf(obj).Elem(), &walkPath{base: path}, func(p *field.Path, err error, detail string) {
		errs = append(errs, derr(p, err, detail))
	})
	if len(errs) == 0 {
		for _, p := range missingRequired(kind, m, path) {
			errs = append(errs, derr(p, ErrInvalidManifest, "required by KubeVirt's schema"))
		}
	}
	if len(errs) > 0 {
		// Maps were walked in random order; report in path order.
		slices.SortStableFunc(errs, func(a, b *DecodeError) int { return strings.Compare(a.Path, b.Path) })
		out := make([]error, len(errs))
		for i, e := range errs {
			out[i] = e
		}
		return nil, out
	}
	if raw == nil {
		raw, err = json.Marshal(m)
	}
	if err == nil {
		err = json.Unmarshal(raw, obj)
		// A served older version is decoded as the version it maps to.
		obj.GetObjectKind().SetGroupVersionKind(gvk)
	}
	if err != nil {
		// The walk checks every value, so this is a value the walk does not
		// know how to check; report it against the object.
		return nil, []error{derr(path, ErrInvalidManifest, err.Error())}
	}
	return []Object{obj}, nil
}

func (d *decoder) decodeList(index int, path *field.Path, m map[string]any, derr func(*field.Path, error, string) *DecodeError) ([]Object, []error) {
	var errs []error
	for k := range m {
		switch k {
		case "apiVersion", "kind", "metadata", "items":
		default:
			errs = append(errs, derr(path.Child(k), ErrUnknownField, ""))
		}
	}
	items, ok := m["items"].([]any)
	if !ok && m["items"] != nil {
		errs = append(errs, derr(path.Child("items"), ErrInvalidManifest, "expected a list"))
	}
	var objs []Object
	for i, it := range items {
		im, ok := it.(map[string]any)
		if !ok {
			errs = append(errs, derr(path.Child("items").Index(i), ErrInvalidManifest, "expected an object"))
			continue
		}
		got, ierrs := d.decodeObject(index, path.Child("items").Index(i), im, nil)
		objs = append(objs, got...)
		errs = append(errs, ierrs...)
	}
	return objs, errs
}

// Format selects the encoding Encode writes.
type Format int

// Encodings.
const (
	// FormatYAML writes YAML documents separated by "---".
	FormatYAML Format = iota
	// FormatJSON writes one indented JSON object per object.
	FormatJSON
)

// Encode writes objects as YAML documents separated by "---". apiVersion
// and kind are filled from the Go type when empty; the objects themselves
// are not modified.
func Encode(w io.Writer, objs ...Object) error { return EncodeFormat(w, FormatYAML, objs...) }

// EncodeFormat writes objects in the given format.
func EncodeFormat(w io.Writer, format Format, objs ...Object) error {
	for i, obj := range objs {
		out := obj
		if gvk, ok := GVKOf(obj); ok && obj.GetObjectKind().GroupVersionKind().Empty() {
			out, ok = obj.DeepCopyObject().(Object)
			if !ok {
				return fmt.Errorf("encode object %d: deep copy of %T is not an Object", i, obj)
			}
			out.GetObjectKind().SetGroupVersionKind(gvk)
		}
		var data []byte
		var err error
		switch format {
		case FormatJSON:
			data, err = json.MarshalIndent(out, "", "  ")
			data = append(data, '\n')
		default:
			data, err = yaml.Marshal(out)
			if i > 0 {
				data = append([]byte("---\n"), data...)
			}
		}
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", out.GetObjectKind().GroupVersionKind().Kind, objectKey(out.GetNamespace(), out.GetName()), err)
		}
		if _, err := w.Write(data); err != nil {
			return fmt.Errorf("encode: %w", err)
		}
	}
	return nil
}
