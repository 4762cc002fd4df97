package apiserver

import (
	"context"
	"crypto/subtle"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit"
)

// Authentication and authorization errors.
var (
	// ErrUnauthenticated: the request carries no credentials a configured
	// method accepts.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrForbidden: the user may not do the request.
	ErrForbidden = errors.New("forbidden")
	// ErrAuthFile: a token or policy file is malformed.
	ErrAuthFile = errors.New("bad auth file")
)

// maxAuthFileBytes bounds token and policy files.
const maxAuthFileBytes = 4 << 20

// User is an authenticated client.
type User struct {
	Name   string
	UID    string
	Groups []string
}

// IsAdmin reports whether the user is in AdminGroup.
func (u *User) IsAdmin() bool { return slices.Contains(u.Groups, AdminGroup) }

// IsControlPlane reports whether the user is in ControlPlaneGroup.
func (u *User) IsControlPlane() bool { return slices.Contains(u.Groups, ControlPlaneGroup) }

// NodeName returns the node a node agent acts for: the user is
// NodeUser(NAME) and in NodesGroup, as Kubernetes names its kubelets.
func (u *User) NodeName() (string, bool) {
	node, ok := strings.CutPrefix(u.Name, NodeUserPrefix)
	if !ok || node == "" || !slices.Contains(u.Groups, NodesGroup) {
		return "", false
	}
	return node, true
}

// NodeUser is the user name of node's agent.
func NodeUser(node string) string { return NodeUserPrefix + node }

// Authenticator identifies the client of a request. It returns (nil, nil)
// when the request carries no credentials of its kind, and an error when it
// carries bad ones.
type Authenticator interface {
	Authenticate(r *http.Request) (*User, error)
}

// Authenticators tries each in turn; the first that identifies the client
// wins, the first error stops.
type Authenticators []Authenticator

// Authenticate implements Authenticator.
func (as Authenticators) Authenticate(r *http.Request) (*User, error) {
	for _, a := range as {
		u, err := a.Authenticate(r)
		if err != nil || u != nil {
			return u, err
		}
	}
	return nil, nil
}

// ClientCertAuthenticator identifies clients by the verified TLS client
// certificate: the subject's common name is the user, its organizations
// the groups. The TLS server must verify client certificates against the
// CA it trusts (Serve does).
type ClientCertAuthenticator struct{}

// Authenticate implements Authenticator.
func (ClientCertAuthenticator) Authenticate(r *http.Request) (*User, error) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return nil, nil
	}
	c := r.TLS.VerifiedChains[0][0]
	if c.Subject.CommonName == "" {
		return nil, fmt.Errorf("%w: client certificate without a common name", ErrUnauthenticated)
	}
	return &User{Name: c.Subject.CommonName, Groups: slices.Clone(c.Subject.Organization)}, nil
}

// TokenAuthenticator identifies clients by a bearer token.
type TokenAuthenticator struct {
	tokens map[string]*User
}

// ParseTokenFile reads kube-apiserver's static token file format: one CSV
// line per token, token,user,uid[,"group1,group2"]; blank lines and lines
// starting with # are skipped.
func ParseTokenFile(r io.Reader) (*TokenAuthenticator, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxAuthFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAuthFile, err)
	}
	if len(data) > maxAuthFileBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrAuthFile, maxAuthFileBytes)
	}
	cr := csv.NewReader(strings.NewReader(string(data)))
	cr.FieldsPerRecord = -1
	cr.Comment = '#'
	t := &TokenAuthenticator{tokens: map[string]*User{}}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrAuthFile, line, err)
		}
		if len(rec) < 3 || rec[0] == "" || rec[1] == "" {
			return nil, fmt.Errorf("%w: line %d: want token,user,uid[,\"group1,group2\"]", ErrAuthFile, line)
		}
		if _, dup := t.tokens[rec[0]]; dup {
			return nil, fmt.Errorf("%w: line %d: token given twice", ErrAuthFile, line)
		}
		u := &User{Name: rec[1], UID: rec[2]}
		if len(rec) > 3 && rec[3] != "" {
			for g := range strings.SplitSeq(rec[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		t.tokens[rec[0]] = u
	}
	return t, nil
}

// LoadTokenFile is ParseTokenFile of a file.
func LoadTokenFile(path string) (*TokenAuthenticator, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAuthFile, err)
	}
	defer f.Close()
	t, err := ParseTokenFile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Authenticate implements Authenticator.
func (t *TokenAuthenticator) Authenticate(r *http.Request) (*User, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, nil
	}
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return nil, nil
	}
	tok = strings.TrimSpace(tok)
	for known, u := range t.tokens {
		if subtle.ConstantTimeCompare([]byte(known), []byte(tok)) == 1 {
			cp := *u
			cp.Groups = slices.Clone(u.Groups)
			return &cp, nil
		}
	}
	return nil, fmt.Errorf("%w: invalid bearer token", ErrUnauthenticated)
}

// Attributes describe a request for authorization.
type Attributes struct {
	User        *User
	Verb        string // get, list, watch, create, update, patch, delete
	Namespace   string // "" for cluster-scoped kinds and all-namespace lists
	Group       string
	Resource    string
	Subresource string
	Name        string
}

// Authorizer decides whether a request may proceed: nil allows it, an error
// wrapping ErrForbidden refuses it.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) error
}

// PolicyRule grants a user or group verbs on resources in namespaces.
type PolicyRule struct {
	// User or Group the rule applies to (one of them).
	User  string `json:"user,omitempty"`
	Group string `json:"group,omitempty"`
	// Namespaces the rule covers; "*" covers every namespace, all-namespace
	// lists and cluster-scoped kinds.
	Namespaces []string `json:"namespaces"`
	// Verbs allowed; empty or "*" allows all.
	Verbs []string `json:"verbs,omitempty"`
	// Resources (plural names, optionally "/status") allowed; empty or "*"
	// allows all but writes of the status subresource: those only a rule
	// naming "RESOURCE/status" or "*/status" grants.
	Resources []string `json:"resources,omitempty"`
}

// Policy authorizes by user and namespace. Members of AdminGroup and of
// ControlPlaneGroup may do everything; a node agent (NodeUser in
// NodesGroup) may write the status of VMIs (the server admits only those
// of VMIs on its node, see the package documentation) and of its own Node;
// anyone else only what a rule grants. Status writes (update and patch of
// RESOURCE/status) are granted only by a rule that names the status
// resource: the status is the control plane's record, and KubeVirt's
// edit role does not grant it either.
type Policy struct {
	Rules []PolicyRule `json:"rules"`
}

// ParsePolicy reads a YAML or JSON policy: {rules: [{user, group,
// namespaces, verbs, resources}]}.
func ParsePolicy(r io.Reader) (*Policy, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxAuthFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAuthFile, err)
	}
	if len(data) > maxAuthFileBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrAuthFile, maxAuthFileBytes)
	}
	var p Policy
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAuthFile, err)
	}
	for i, rule := range p.Rules {
		if (rule.User == "") == (rule.Group == "") {
			return nil, fmt.Errorf("%w: rules[%d]: set exactly one of user and group", ErrAuthFile, i)
		}
		if len(rule.Namespaces) == 0 {
			return nil, fmt.Errorf("%w: rules[%d].namespaces: required (\"*\" for all)", ErrAuthFile, i)
		}
	}
	return &p, nil
}

// LoadPolicyFile is ParsePolicy of a file.
func LoadPolicyFile(path string) (*Policy, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAuthFile, err)
	}
	defer f.Close()
	p, err := ParsePolicy(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

func matchAll(list []string, v string) bool {
	return len(list) == 0 || slices.Contains(list, "*") || slices.Contains(list, v)
}

// Authorize implements Authorizer.
func (p *Policy) Authorize(_ context.Context, a Attributes) error {
	if a.User == nil {
		return fmt.Errorf("%w: no user", ErrForbidden)
	}
	if a.User.IsAdmin() || a.User.IsControlPlane() {
		return nil
	}
	if node, ok := a.User.NodeName(); ok && nodeStatusWrite(node, a) {
		return nil
	}
	res := a.Resource
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	for _, rule := range p.Rules {
		if rule.User != "" && rule.User != a.User.Name {
			continue
		}
		if rule.Group != "" && !slices.Contains(a.User.Groups, rule.Group) {
			continue
		}
		nsOK := slices.Contains(rule.Namespaces, "*") || (a.Namespace != "" && slices.Contains(rule.Namespaces, a.Namespace))
		if !nsOK || !matchAll(rule.Verbs, a.Verb) {
			continue
		}
		if isStatusWrite(a) {
			if slices.Contains(rule.Resources, res) || slices.Contains(rule.Resources, "*/status") {
				return nil
			}
			continue
		}
		if matchAll(rule.Resources, res) || matchAll(rule.Resources, a.Resource) && a.Subresource == "" {
			return nil
		}
	}
	if isStatusWrite(a) {
		return fmt.Errorf("%w: no rule names %q", ErrForbidden, res)
	}
	return fmt.Errorf("%w: no rule grants it", ErrForbidden)
}

// isStatusWrite reports whether a is an update or patch of the status
// subresource.
func isStatusWrite(a Attributes) bool {
	return a.Subresource == "status" && (a.Verb == "update" || a.Verb == "patch")
}

// nodeStatusWrite reports whether a is a status write node's agent may do:
// a VMI's (the server admits those of VMIs on node only) or its Node's.
func nodeStatusWrite(node string, a Attributes) bool {
	if !isStatusWrite(a) {
		return false
	}
	switch {
	case a.Group == virtkit.GroupName && a.Resource == "virtualmachineinstances":
		return true
	case a.Group == virtkit.VirtkitGroupName && a.Resource == "nodes":
		return a.Name == node
	}
	return false
}

type userKey struct{}

func withUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the authenticated user of a request's context.
func UserFrom(ctx context.Context) (*User, bool) {
	u, ok := ctx.Value(userKey{}).(*User)
	return u, ok
}

func (s *Server) authenticate(r *http.Request) (*User, error) {
	if s.opts.Authenticator == nil {
		return nil, errors.New("no authentication configured")
	}
	u, err := s.opts.Authenticator.Authenticate(r)
	if err != nil {
		return nil, err
	}
	if u == nil {
		return nil, errors.New("anonymous requests are not allowed")
	}
	return u, nil
}

func (s *Server) authorize(ctx context.Context, u *User, info *requestInfo) error {
	if s.opts.Authorizer == nil {
		return nil
	}
	a := Attributes{
		User: u, Verb: info.verb, Namespace: info.namespace, Group: info.res.gvk.Group,
		Resource: info.res.plural, Subresource: info.subresource, Name: info.name,
	}
	if err := s.opts.Authorizer.Authorize(ctx, a); err != nil {
		scope := "at the cluster scope"
		if a.Namespace != "" {
			scope = fmt.Sprintf("in the namespace %q", a.Namespace)
		}
		res := a.Resource
		if a.Subresource != "" {
			res += "/" + a.Subresource
		}
		why := ""
		if isStatusWrite(a) {
			why = fmt.Sprintf(": the status is written by the control plane (controllers and node agents); "+
				"a user may write it only where a policy rule names %q", res)
		}
		return apierrors.NewForbidden(info.res.groupResource(), info.name,
			fmt.Errorf("User %q cannot %s resource %q in API group %q %s%s", u.Name, a.Verb, res, a.Group, scope, why))
	}
	return nil
}
