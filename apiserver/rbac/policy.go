package rbac

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// ErrPolicy: a policy file or a set of RBAC objects is malformed.
var ErrPolicy = errors.New("bad RBAC policy")

// MaxPolicyBytes bounds a policy file.
const MaxPolicyBytes = 4 << 20

// Policy is a set of RBAC objects: what an [Authorizer] evaluates.
type Policy struct {
	Roles               []rbacv1.Role
	ClusterRoles        []rbacv1.ClusterRole
	RoleBindings        []rbacv1.RoleBinding
	ClusterRoleBindings []rbacv1.ClusterRoleBinding
}

// Append adds o's objects to p.
func (p *Policy) Append(o *Policy) {
	if o == nil {
		return
	}
	p.Roles = append(p.Roles, o.Roles...)
	p.ClusterRoles = append(p.ClusterRoles, o.ClusterRoles...)
	p.RoleBindings = append(p.RoleBindings, o.RoleBindings...)
	p.ClusterRoleBindings = append(p.ClusterRoleBindings, o.ClusterRoleBindings...)
}

// typeMeta is what a document is peeked at before its strict decoding.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// list is a kind: List document (apiVersion v1).
type list struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   map[string]any `json:"metadata,omitempty"`
	Items      []rawItem      `json:"items"`
}

// rawItem keeps a List item undecoded.
type rawItem []byte

// UnmarshalJSON implements json.Unmarshaler.
func (m *rawItem) UnmarshalJSON(b []byte) error {
	*m = append((*m)[:0], b...)
	return nil
}

// ParsePolicy reads RBAC objects from YAML or JSON: Role, ClusterRole,
// RoleBinding and ClusterRoleBinding of rbac.authorization.k8s.io/v1, as
// several YAML documents (separated by ---), as the items of a kind: List
// (apiVersion v1), or both. Decoding is strict: an unknown or duplicate
// field is an error naming its path; the objects are then validated as
// Kubernetes validates them (see [Validate]). Input above
// [MaxPolicyBytes] is refused.
func ParsePolicy(r io.Reader) (*Policy, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxPolicyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	if len(data) > MaxPolicyBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrPolicy, MaxPolicyBytes)
	}
	p := &Policy{}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for doc := 0; ; doc++ {
		chunk, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: document %d: %w", ErrPolicy, doc, err)
		}
		if len(bytes.TrimSpace(stripComments(chunk))) == 0 {
			continue
		}
		js, err := yaml.YAMLToJSONStrict(chunk)
		if err != nil {
			return nil, fmt.Errorf("%w: document %d: %w", ErrPolicy, doc, err)
		}
		if string(bytes.TrimSpace(js)) == "null" {
			continue
		}
		if err := p.decodeObject(js, fmt.Sprintf("document %d", doc)); err != nil {
			return nil, err
		}
	}
	if err := Validate(p); err != nil {
		return nil, err
	}
	return p, nil
}

// LoadPolicyFile is ParsePolicy of a file.
func LoadPolicyFile(path string) (*Policy, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	defer f.Close()
	p, err := ParsePolicy(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// decodeObject decodes one JSON object (a document or a List item) into p.
func (p *Policy) decodeObject(js []byte, where string) error {
	var tm typeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrPolicy, where, err)
	}
	if tm.Kind == "List" {
		if tm.APIVersion != "v1" {
			return fmt.Errorf("%w: %s: apiVersion: Unsupported value: %q: supported values: \"v1\"", ErrPolicy, where, tm.APIVersion)
		}
		var l list
		if err := strict(js, &l); err != nil {
			return fmt.Errorf("%w: %s (%s): %w", ErrPolicy, where, tm.Kind, err)
		}
		for i, item := range l.Items {
			if err := p.decodeObject(item, fmt.Sprintf("%s: items[%d]", where, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if tm.APIVersion != rbacv1.SchemeGroupVersion.String() {
		return fmt.Errorf("%w: %s: apiVersion: Unsupported value: %q: supported values: %q",
			ErrPolicy, where, tm.APIVersion, rbacv1.SchemeGroupVersion.String())
	}
	var err error
	switch tm.Kind {
	case "Role":
		var o rbacv1.Role
		if err = strict(js, &o); err == nil {
			p.Roles = append(p.Roles, o)
		}
	case "ClusterRole":
		var o rbacv1.ClusterRole
		if err = strict(js, &o); err == nil {
			p.ClusterRoles = append(p.ClusterRoles, o)
		}
	case "RoleBinding":
		var o rbacv1.RoleBinding
		if err = strict(js, &o); err == nil {
			p.RoleBindings = append(p.RoleBindings, o)
		}
	case "ClusterRoleBinding":
		var o rbacv1.ClusterRoleBinding
		if err = strict(js, &o); err == nil {
			p.ClusterRoleBindings = append(p.ClusterRoleBindings, o)
		}
	default:
		return fmt.Errorf("%w: %s: kind: Unsupported value: %q: supported values: "+
			"\"Role\", \"ClusterRole\", \"RoleBinding\", \"ClusterRoleBinding\", \"List\"", ErrPolicy, where, tm.Kind)
	}
	if err != nil {
		return fmt.Errorf("%w: %s (%s): %w", ErrPolicy, where, tm.Kind, err)
	}
	return nil
}

// strict decodes js into v, refusing unknown and duplicate fields; the
// error names the fields by path.
func strict(js []byte, v any) error {
	strictErrs, err := sigsjson.UnmarshalStrict(js, v)
	if err != nil {
		return err
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			msgs[i] = e.Error()
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// stripComments drops YAML comment lines, so that a document of comments
// only counts as empty.
func stripComments(b []byte) []byte {
	var out []byte
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] == '#' {
			continue
		}
		out = append(out, line...)
		out = append(out, '\n')
	}
	return out
}
