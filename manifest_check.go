package virtkit

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The strict check of a decoded manifest: every field known to the Go
// types, of the right JSON type, with bounded quantities.

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
