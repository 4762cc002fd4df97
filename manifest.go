package virtkit

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
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

var (
	quantityType = reflect.TypeFor[resource.Quantity]()
	timeType     = reflect.TypeFor[metav1.Time]()
	intstrType   = reflect.TypeFor[intstr.IntOrString]()
	unmarshaler  = reflect.TypeFor[json.Unmarshaler]()
)

type reportFunc func(p *field.Path, err error, detail string)

// walkPath is the path of the value being checked. It lives on the stack
// and becomes a *field.Path only when a problem is reported.
//
// +k8s:openapi-gen=false
type walkPath struct {
	parent *walkPath
	base   *field.Path // set on the root: where the object sits (nil, or items[i])
	name   string      // field name or map key
	index  int
	kind   pathKind
}

type pathKind uint8

const (
	pathRoot pathKind = iota
	pathField
	pathKey
	pathIndex
)

func (w *walkPath) fieldPath() *field.Path {
	if w.kind == pathRoot {
		return w.base
	}
	parent := w.parent.fieldPath()
	switch w.kind {
	case pathKey:
		return parent.Key(w.name)
	case pathIndex:
		return parent.Index(w.index)
	}
	if parent == nil {
		return field.NewPath(w.name)
	}
	return parent.Child(w.name)
}

// parseQuantityBounded parses s as a resource.Quantity after refusing an
// exponent beyond MaxDecimalExponent.
func parseQuantityBounded(s string) error {
	if err := CheckDecimalExponent([]byte(s)); err != nil {
		return err
	}
	_, err := resource.ParseQuantity(s)
	return err
}

// check walks a generic JSON value against a Go type's json tags and
// reports unknown fields and values of the wrong type with their paths.
func (d *decoder) check(v any, t reflect.Type, wp *walkPath, report reportFunc) {
	if v == nil {
		return // null leaves the zero value, as encoding/json does
	}
	switch t {
	case quantityType:
		switch q := v.(type) {
		case string:
			if err := parseQuantityBounded(q); err != nil {
				report(wp.fieldPath(), ErrInvalidManifest, err.Error())
			}
		case json.Number:
			if err := parseQuantityBounded(q.String()); err != nil {
				report(wp.fieldPath(), ErrInvalidManifest, err.Error())
			}
		default:
			report(wp.fieldPath(), ErrInvalidManifest, "expected a quantity, got "+jsonTypeName(v))
		}
		return
	case timeType:
		s, ok := v.(string)
		if !ok {
			report(wp.fieldPath(), ErrInvalidManifest, "expected an RFC 3339 time, got "+jsonTypeName(v))
			return
		}
		var tm metav1.Time
		if err := tm.UnmarshalQueryParameter(s); err != nil {
			report(wp.fieldPath(), ErrInvalidManifest, "expected an RFC 3339 time: "+err.Error())
		}
		return
	case intstrType:
		switch n := v.(type) {
		case string:
		case json.Number:
			if _, err := strconv.ParseInt(n.String(), 10, 32); err != nil {
				report(wp.fieldPath(), ErrInvalidManifest, "expected a 32-bit integer or a string")
			}
		default:
			report(wp.fieldPath(), ErrInvalidManifest, "expected an integer or a string, got "+jsonTypeName(v))
		}
		return
	}
	if t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(unmarshaler) {
		return // custom JSON (e.g. managedFields' FieldsV1): encoding/json decides
	}
	switch t.Kind() {
	case reflect.Pointer:
		d.check(v, t.Elem(), wp, report)
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			report(wp.fieldPath(), ErrInvalidManifest, "expected an object, got "+jsonTypeName(v))
			return
		}
		fields := d.structFields(t)
		for k, val := range m {
			child := walkPath{parent: wp, name: k, kind: pathField}
			f, ok := fields[k]
			if !ok {
				if why, known := notModelled(t.Name(), k); known {
					report(child.fieldPath(), errNotModelled, why)
				} else {
					report(child.fieldPath(), ErrUnknownField, "")
				}
				continue
			}
			d.check(val, f.typ, &child, report)
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			report(wp.fieldPath(), ErrInvalidManifest, "expected an object, got "+jsonTypeName(v))
			return
		}
		for k, val := range m {
			d.check(val, t.Elem(), &walkPath{parent: wp, name: k, kind: pathKey}, report)
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			if s, ok := v.(string); !ok {
				report(wp.fieldPath(), ErrInvalidManifest, "expected base64 data, got "+jsonTypeName(v))
			} else if _, err := base64.StdEncoding.DecodeString(s); err != nil {
				// The value is not echoed: it may be a Secret's.
				report(wp.fieldPath(), ErrInvalidManifest, "not base64 data")
			}
			return
		}
		items, ok := v.([]any)
		if !ok {
			report(wp.fieldPath(), ErrInvalidManifest, "expected a list, got "+jsonTypeName(v))
			return
		}
		for i, it := range items {
			d.check(it, t.Elem(), &walkPath{parent: wp, index: i, kind: pathIndex}, report)
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			report(wp.fieldPath(), ErrInvalidManifest, "expected a string, got "+jsonTypeName(v))
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			report(wp.fieldPath(), ErrInvalidManifest, "expected a boolean, got "+jsonTypeName(v))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			report(wp.fieldPath(), ErrInvalidManifest, "expected an integer, got "+jsonTypeName(v))
			return
		}
		if _, err := strconv.ParseInt(n.String(), 10, t.Bits()); err != nil {
			report(wp.fieldPath(), ErrInvalidManifest, fmt.Sprintf("expected a %d-bit integer, got %s", t.Bits(), n))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			report(wp.fieldPath(), ErrInvalidManifest, "expected an integer, got "+jsonTypeName(v))
			return
		}
		if _, err := strconv.ParseUint(n.String(), 10, t.Bits()); err != nil {
			report(wp.fieldPath(), ErrInvalidManifest, fmt.Sprintf("expected a non-negative %d-bit integer, got %s", t.Bits(), n))
		}
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			report(wp.fieldPath(), ErrInvalidManifest, "expected a number, got "+jsonTypeName(v))
			return
		}
		if _, err := strconv.ParseFloat(n.String(), t.Bits()); err != nil {
			report(wp.fieldPath(), ErrInvalidManifest, "expected a number, got "+n.String())
		}
	case reflect.Interface:
		// any value is fine
	default:
		report(wp.fieldPath(), ErrInvalidManifest, "unsupported Go type "+t.String())
	}
}

// structFields maps the JSON names of t's fields (inline structs
// flattened) to their types, from the precomputed tables when t is one of
// this package's types.
func (d *decoder) structFields(t reflect.Type) map[string]structField {
	if f, ok := fieldTables()[t]; ok {
		return f
	}
	if f, ok := d.fields[t]; ok {
		return f
	}
	f := computeStructFields(t)
	d.fields[t] = f
	return f
}

// fieldTables holds the JSON field tables of every struct type reachable
// from the known kinds. It is computed once on first use and never
// modified afterwards.
var fieldTables = sync.OnceValue(func() map[reflect.Type]map[string]structField {
	tables := map[reflect.Type]map[string]structField{}
	var visit func(t reflect.Type)
	visit = func(t reflect.Type) {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Array:
			visit(t.Elem())
		case reflect.Struct:
			if _, done := tables[t]; done {
				return
			}
			fields := computeStructFields(t)
			tables[t] = fields
			for _, f := range fields {
				visit(f.typ)
			}
		}
	}
	for _, k := range kinds() {
		visit(reflect.TypeOf(k.newObject()))
		visit(reflect.TypeOf(k.newList()))
	}
	return tables
})

func computeStructFields(t reflect.Type) map[string]structField {
	out := map[string]structField{}
	for i := range t.NumField() {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" && opts == "" {
			continue
		}
		inline := hasTagOption(opts, "inline") || (sf.Anonymous && name == "")
		if inline {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				maps.Copy(out, computeStructFields(ft))
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		out[name] = structField{typ: sf.Type}
	}
	return out
}

func hasTagOption(opts, want string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == want {
			return true
		}
	}
	return false
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
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
