package apiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// MaxJSONPatchOperations bounds the operations of a JSON patch, as
// kube-apiserver's.
const MaxJSONPatchOperations = 10000

// Errors of applying a JSON patch; errPatchTooLarge becomes 413.
var (
	errPatchTooLarge = errors.New("patch too large")
	errPatch         = errors.New("json patch")
)

// jsonPatchOp is one RFC 6902 operation.
type jsonPatchOp struct {
	Op    string           `json:"op"`
	Path  *string          `json:"path"`
	From  *string          `json:"from"`
	Value *json.RawMessage `json:"value"`
}

// applyJSONPatch applies an RFC 6902 patch to doc, refusing a patch of more
// than MaxJSONPatchOperations operations and one whose result would be
// larger than maxBytes: the size of the document is kept up to date
// operation by operation, and a copy is measured before it is made, so a
// patch that copies a document onto itself again and again is refused
// before it takes memory.
func applyJSONPatch(doc, patch []byte, maxBytes int64) ([]byte, error) {
	var ops []jsonPatchOp
	if err := json.Unmarshal(patch, &ops); err != nil {
		return nil, fmt.Errorf("%w: decode: %w", errPatch, err)
	}
	if len(ops) > MaxJSONPatchOperations {
		return nil, fmt.Errorf("%w: the allowed maximum operations in a JSON patch is %d, got %d",
			errPatchTooLarge, MaxJSONPatchOperations, len(ops))
	}
	root, err := decodeJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: decode object: %w", errPatch, err)
	}
	p := &patcher{root: root, size: int64(len(doc)), max: maxBytes}
	for i, op := range ops {
		if err := p.apply(op); err != nil {
			return nil, fmt.Errorf("operation %d (%s): %w", i, op.Op, err)
		}
	}
	return json.Marshal(p.root)
}

func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

type patcher struct {
	root      any
	size, max int64
}

func (p *patcher) grow(n int64) error {
	p.size += n
	if p.size > p.max {
		return fmt.Errorf("%w: the patched object would exceed %d bytes", errPatchTooLarge, p.max)
	}
	return nil
}

func (p *patcher) apply(op jsonPatchOp) error {
	if op.Path == nil {
		return fmt.Errorf("%w: path is required", errPatch)
	}
	path := *op.Path
	value := func() (any, error) {
		if op.Value == nil {
			return nil, fmt.Errorf("%w: value is required", errPatch)
		}
		return decodeJSON(*op.Value)
	}
	from := func() (string, error) {
		if op.From == nil {
			return "", fmt.Errorf("%w: from is required", errPatch)
		}
		return *op.From, nil
	}
	switch op.Op {
	case "add":
		v, err := value()
		if err != nil {
			return err
		}
		if err := p.grow(int64(len(*op.Value))); err != nil {
			return err
		}
		return p.add(path, v)
	case "remove":
		old, err := p.remove(path)
		if err == nil {
			p.size -= jsonSize(old, -1)
		}
		return err
	case "replace":
		v, err := value()
		if err != nil {
			return err
		}
		old, err := p.remove(path)
		if err != nil {
			return err
		}
		if err := p.grow(int64(len(*op.Value)) - jsonSize(old, -1)); err != nil {
			return err
		}
		return p.add(path, v)
	case "move":
		f, err := from()
		if err != nil {
			return err
		}
		if f == path {
			return nil
		}
		if strings.HasPrefix(path, f+"/") {
			return fmt.Errorf("%w: cannot move %q into itself", errPatch, f)
		}
		v, err := p.remove(f)
		if err != nil {
			return err
		}
		return p.add(path, v)
	case "copy":
		f, err := from()
		if err != nil {
			return err
		}
		v, err := p.get(f)
		if err != nil {
			return err
		}
		n := jsonSize(v, p.max-p.size)
		if err := p.grow(n); err != nil {
			return err
		}
		return p.add(path, deepCopyJSON(v))
	case "test":
		v, err := value()
		if err != nil {
			return err
		}
		cur, err := p.get(path)
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(normalizeJSON(cur), normalizeJSON(v)) {
			return fmt.Errorf("%w: test of %q failed", errPatch, path)
		}
		return nil
	}
	return fmt.Errorf("%w: unknown operation %q", errPatch, op.Op)
}

// splitPointer parses a JSON pointer ("" is the whole document).
func splitPointer(ptr string) ([]string, error) {
	if ptr == "" {
		return nil, nil
	}
	if ptr[0] != '/' {
		return nil, fmt.Errorf("%w: path %q does not start with /", errPatch, ptr)
	}
	parts := strings.Split(ptr[1:], "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

// parent returns the container holding the last token of ptr, and that
// token.
func (p *patcher) parent(ptr string) (any, string, error) {
	parts, err := splitPointer(ptr)
	if err != nil {
		return nil, "", err
	}
	if len(parts) == 0 {
		return nil, "", nil
	}
	cur := p.root
	for _, tok := range parts[:len(parts)-1] {
		if cur, err = child(cur, tok, ptr); err != nil {
			return nil, "", err
		}
	}
	return cur, parts[len(parts)-1], nil
}

func child(cur any, tok, ptr string) (any, error) {
	switch c := cur.(type) {
	case map[string]any:
		v, ok := c[tok]
		if !ok {
			return nil, fmt.Errorf("%w: %q: no member %q", errPatch, ptr, tok)
		}
		return v, nil
	case []any:
		i, err := index(tok, len(c)-1)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", ptr, err)
		}
		return c[i], nil
	}
	return nil, fmt.Errorf("%w: %q: %q is not in an object or array", errPatch, ptr, tok)
}

func index(tok string, max int) (int, error) {
	i, err := strconv.Atoi(tok)
	if err != nil || i < 0 || i > max || (len(tok) > 1 && tok[0] == '0') {
		return 0, fmt.Errorf("%w: index %q out of range", errPatch, tok)
	}
	return i, nil
}

func (p *patcher) get(ptr string) (any, error) {
	parent, tok, err := p.parent(ptr)
	if err != nil {
		return nil, err
	}
	if parent == nil && tok == "" && ptr == "" {
		return p.root, nil
	}
	return child(parent, tok, ptr)
}

// add sets ptr to v, setting its parent's member or inserting into an
// array ("-" appends).
func (p *patcher) add(ptr string, v any) error {
	if ptr == "" {
		p.root = v
		return nil
	}
	parent, tok, err := p.parent(ptr)
	if err != nil {
		return err
	}
	switch c := parent.(type) {
	case map[string]any:
		c[tok] = v
		return nil
	case []any:
		i := len(c)
		if tok != "-" {
			if i, err = index(tok, len(c)); err != nil {
				return fmt.Errorf("%q: %w", ptr, err)
			}
		}
		c = append(c, nil)
		copy(c[i+1:], c[i:])
		c[i] = v
		return p.setParent(ptr, c)
	}
	return fmt.Errorf("%w: %q: the parent is not an object or array", errPatch, ptr)
}

// setParent stores a grown or shrunk array back in its own parent.
func (p *patcher) setParent(ptr string, arr []any) error {
	parts, _ := splitPointer(ptr)
	up := ""
	for _, s := range parts[:len(parts)-1] {
		up += "/" + strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
	}
	if up == "" {
		p.root = arr
		return nil
	}
	gp, tok, err := p.parent(up)
	if err != nil {
		return err
	}
	switch c := gp.(type) {
	case map[string]any:
		c[tok] = arr
	case []any:
		i, err := index(tok, len(c)-1)
		if err != nil {
			return err
		}
		c[i] = arr
	}
	return nil
}

// remove takes ptr out and returns what it held.
func (p *patcher) remove(ptr string) (any, error) {
	if ptr == "" {
		return nil, fmt.Errorf("%w: cannot remove the whole document", errPatch)
	}
	parent, tok, err := p.parent(ptr)
	if err != nil {
		return nil, err
	}
	switch c := parent.(type) {
	case map[string]any:
		v, ok := c[tok]
		if !ok {
			return nil, fmt.Errorf("%w: %q: no member %q", errPatch, ptr, tok)
		}
		delete(c, tok)
		return v, nil
	case []any:
		i, err := index(tok, len(c)-1)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", ptr, err)
		}
		v := c[i]
		c = append(c[:i], c[i+1:]...)
		return v, p.setParent(ptr, c)
	}
	return nil, fmt.Errorf("%w: %q: the parent is not an object or array", errPatch, ptr)
}

// jsonSize is about the encoded size of v; with budget >= 0 it stops
// counting once past budget.
func jsonSize(v any, budget int64) int64 {
	var n int64
	var walk func(any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case map[string]any:
			n += 2
			for k, e := range x {
				n += int64(len(k)) + 4
				if !walk(e) {
					return false
				}
			}
		case []any:
			n += 2
			for _, e := range x {
				n++
				if !walk(e) {
					return false
				}
			}
		case string:
			n += int64(len(x)) + 2
		case json.Number:
			n += int64(len(x))
		default:
			n += 5
		}
		return budget < 0 || n <= budget
	}
	walk(v)
	return n
}

func deepCopyJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopyJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopyJSON(e)
		}
		return out
	}
	return v
}

// normalizeJSON turns numbers into float64 so that 1 and 1.0 test equal.
func normalizeJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalizeJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalizeJSON(e)
		}
		return out
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return f
		}
	}
	return v
}
