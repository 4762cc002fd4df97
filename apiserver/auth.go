package apiserver

import (
	"crypto/subtle"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
)

// Authentication errors.
var (
	// ErrUnauthenticated: the request carries no credentials a configured
	// method accepts.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrAuthFile: a token file is malformed.
	ErrAuthFile = errors.New("bad auth file")
)

// maxAuthFileBytes bounds token files.
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
