package virtkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// duplicateKeys reports every key that appears more than once in one
// object of the JSON document doc, at any depth, with its field path (map
// keys as [key], as the strict walk names them). generic is doc decoded
// (last value wins); it tells which kind an object is, so paths follow the
// Go types.
func (d *decoder) duplicateKeys(index int, doc []byte, generic map[string]any) []error {
	w := dupWalker{d: d, dec: json.NewDecoder(bytes.NewReader(doc))}
	w.dec.UseNumber()
	if err := w.value(nil, generic, nil); err != nil {
		// decodeDocument already parsed the document once.
		return []error{&DecodeError{Document: index, Err: ErrInvalidManifest, Detail: err.Error()}}
	}
	if len(w.dups) == 0 {
		return nil
	}
	md, _ := generic["metadata"].(map[string]any)
	kind, _ := generic["kind"].(string)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	slices.SortStableFunc(w.dups, func(a, b string) int { return strings.Compare(a, b) })
	out := make([]error, 0, len(w.dups))
	for _, p := range slices.Compact(w.dups) {
		out = append(out, &DecodeError{Document: index, Kind: kind, Namespace: ns, Name: name, Path: p,
			Err: ErrInvalidManifest, Detail: "duplicate key"})
	}
	return out
}

// dupWalker reads a JSON document token by token.
//
// +kubebuilder:object:generate=false
// +k8s:openapi-gen=false
type dupWalker struct {
	d    *decoder
	dec  *json.Decoder
	dups []string
}

// value reads one value; t is its Go type when known, generic its decoded
// form.
func (w *dupWalker) value(t reflect.Type, generic any, p *field.Path) error {
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch delim {
	case '{':
		return w.object(t, generic, p)
	case '[':
		items, _ := generic.([]any)
		var elem reflect.Type
		if t != nil && t.Kind() == reflect.Slice {
			elem = t.Elem()
		}
		for i := 0; w.dec.More(); i++ {
			var g any
			if i < len(items) {
				g = items[i]
			}
			if err := w.value(elem, g, p.Index(i)); err != nil {
				return err
			}
		}
		_, err := w.dec.Token() // ']'
		return err
	}
	return fmt.Errorf("unexpected %v", delim)
}

func (w *dupWalker) object(t reflect.Type, generic any, p *field.Path) error {
	m, _ := generic.(map[string]any)
	if t == nil {
		t = objectType(m) // the root, or an item of a List
	}
	var fields map[string]structField
	isMap := false
	if t != nil {
		switch {
		case t == quantityType || t == timeType || t == intstrType:
		case t.Kind() == reflect.Struct:
			fields = w.d.structFields(t)
		case t.Kind() == reflect.Map:
			isMap = true
		}
	}
	seen := map[string]bool{}
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		var childType reflect.Type
		var cp *field.Path
		switch {
		case isMap:
			childType, cp = t.Elem(), p.Key(key)
		case p == nil:
			cp = field.NewPath(key)
		default:
			cp = p.Child(key)
		}
		if f, ok := fields[key]; ok {
			childType = f.typ
		}
		if seen[key] {
			w.dups = append(w.dups, cp.String())
		}
		seen[key] = true
		if err := w.value(childType, m[key], cp); err != nil {
			return err
		}
	}
	_, err := w.dec.Token() // '}'
	return err
}

// objectType is the Go type of a decoded object by its apiVersion and
// kind, nil for an unknown kind or a List.
func objectType(m map[string]any) reflect.Type {
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || kind == "" {
		return nil
	}
	obj, err := NewObject(gv.WithKind(kind))
	if err != nil {
		return nil
	}
	return reflect.TypeOf(obj).Elem()
}
