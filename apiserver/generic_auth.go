package apiserver

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// LoopbackUser is the user of the generic server's requests to itself
// (its admission plugins' informers): a member of AdminGroup.
const LoopbackUser = "system:apiserver"

// requestAuthenticator identifies the client of a request to the generic
// server: the server's own loopback token first, then the Authenticator
// (client certificates, bearer tokens).
type requestAuthenticator struct {
	loopbackToken string
	authn         Authenticator
}

var _ authenticator.Request = requestAuthenticator{}

// publicInfoPaths are the paths a request without credentials may read,
// as kube-apiserver's anonymous authentication restricted to them allows:
// the health checks and the version, which RBAC's
// system:public-info-viewer grants to system:unauthenticated.
var publicInfoPaths = map[string]bool{"/healthz": true, "/livez": true, "/readyz": true, "/version": true, "/version/": true}

// anonymousResponse is the identity of a request without credentials to
// one of publicInfoPaths.
func anonymousResponse() *authenticator.Response {
	return &authenticator.Response{User: &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}}
}

// AuthenticateRequest implements authenticator.Request: an Authenticator
// that finds no credentials of its kind leaves the request anonymous,
// refused with 401 Unauthorized except for a GET or HEAD of one of
// publicInfoPaths, which is authorized as system:anonymous (group
// system:unauthenticated); one that finds bad credentials fails it.
func (a requestAuthenticator) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	resp, ok, err := a.authenticate(r)
	if err != nil || ok {
		return resp, ok, err
	}
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && publicInfoPaths[r.URL.Path] {
		return anonymousResponse(), true, nil
	}
	return nil, false, nil
}

func (a requestAuthenticator) authenticate(r *http.Request) (*authenticator.Response, bool, error) {
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && a.loopbackToken != "" &&
		strings.TrimSpace(tok) == a.loopbackToken {
		return &authenticator.Response{User: &user.DefaultInfo{Name: LoopbackUser, Groups: []string{AdminGroup}}}, true, nil
	}
	if a.authn == nil {
		return nil, false, nil
	}
	u, err := a.authn.Authenticate(r)
	if err != nil {
		return nil, false, err
	}
	if u == nil {
		return nil, false, nil
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: slices.Clone(u.Groups)}}, true, nil
}

// userOf returns the authenticated user of a request's context in the old
// server's shape (nil without one).
func userOf(ctx context.Context) *User {
	u, ok := request.UserFrom(ctx)
	if !ok || u == nil {
		return nil
	}
	return &User{Name: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups()}
}

// newLoopbackToken returns a random bearer token for the server's requests
// to itself.
func newLoopbackToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// errListenerClosed is what Accept returns once a pipeListener is closed.
var errListenerClosed = errors.New("loopback listener closed")

// pipeListener is an in-process listener: DialContext hands one end of a
// net.Pipe to Accept. The generic server's clients of itself use it, so
// its loopback needs no port.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, errListenerClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// DialContext connects to the listener; the network and address are
// ignored.
func (l *pipeListener) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	server, client := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, errListenerClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "loopback" }
