package apiserver_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/apiserver/kubestorage"
	"github.com/virtkit/virtkit/apiserver/rbac"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/store"
)

var (
	vmGVR = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachines"}
)

const testTokens = `alice-token,alice,1002,"team"
`

// testServer is an API server on loopback TLS over a store.
type testServer struct {
	URL   string
	Certs *apiserver.Certificates
	Store store.Store
}

// testNamespaces exist in every test server's store besides the system
// namespaces: the server refuses writes into a namespace that does not.
var testNamespaces = []string{"team-a", "team-b"}

// newStore is a memory store the server can serve: its resourceVersions
// start at 1 (Kubernetes reads 0 as "any").
func newStore(t testing.TB) *store.Memory {
	t.Helper()
	st, err := store.NewMemoryWithOptions(store.Options{StartResourceVersion: 1})
	require.NoError(t, err)
	return st
}

// startServer serves st through NewGeneric on loopback TLS with the admin
// certificate, alice's token (she may use namespace team-a) and opts'
// other settings. The system namespaces and testNamespaces are created in
// st.
func startServer(t testing.TB, st store.Store, opts apiserver.GenericOptions) *testServer {
	t.Helper()
	certs, err := apiserver.EnsureCertificates(t.TempDir(), nil)
	require.NoError(t, err)
	return startServerWith(t, st, opts, certs)
}

// startServerWith is startServer with given certificates.
func startServerWith(t testing.TB, st store.Store, opts apiserver.GenericOptions, certs *apiserver.Certificates) *testServer {
	t.Helper()
	return serveStore(t, st, opts, certs, append(virtkit.SystemNamespaces(), testNamespaces...))
}

// serveStore is startServerWith creating namespaces in st.
func serveStore(t testing.TB, st store.Store, opts apiserver.GenericOptions, certs *apiserver.Certificates, namespaces []string) *testServer {
	t.Helper()
	backend, ok := st.(kubestorage.Backend)
	require.True(t, ok, "store %T cannot back the API server", st)
	require.NoError(t, controller.EnsureNamespaces(t.Context(), st, namespaces...))
	opts.Store = backend
	tokens, err := apiserver.ParseTokenFile(stringsReader(testTokens))
	require.NoError(t, err)
	if opts.Authenticator == nil {
		opts.Authenticator = apiserver.Authenticators{apiserver.ClientCertAuthenticator{}, tokens}
	}
	if opts.Authorizer == nil {
		opts.Authorizer = legacyAuthorizer(t, genericPolicy)
	}
	srv, err := apiserver.NewGeneric(opts)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = srv.Serve(ctx, ln, certs.ServerTLSConfig())
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	require.NoError(t, srv.Start(ctx))
	return &testServer{URL: "https://" + ln.Addr().String(), Certs: certs, Store: st}
}

// legacyAuthorizer is the RBAC authorizer of the bootstrap policy and
// policy, in virtkit's simpler rule format.
func legacyAuthorizer(t testing.TB, policy string) *rbac.Authorizer {
	t.Helper()
	p, err := rbac.ParseLegacyPolicy(strings.NewReader(policy))
	require.NoError(t, err)
	authz, err := rbac.New(rbac.Bootstrap(), p)
	require.NoError(t, err)
	return authz
}

// admin returns a client config authenticated by the admin certificate.
func (ts *testServer) admin() *rest.Config {
	return &rest.Config{Host: ts.URL, TLSClientConfig: rest.TLSClientConfig{
		CAData: ts.Certs.CAPEM, CertData: ts.Certs.AdminCert, KeyData: ts.Certs.AdminKey,
	}, QPS: -1}
}

// token returns a client config authenticated by a bearer token.
func (ts *testServer) token(tok string) *rest.Config {
	return &rest.Config{Host: ts.URL, BearerToken: tok, TLSClientConfig: rest.TLSClientConfig{CAData: ts.Certs.CAPEM}, QPS: -1}
}

// anonymous returns an HTTP client that trusts the CA and sends no
// credentials.
func (ts *testServer) anonymous(t testing.TB) *http.Client {
	t.Helper()
	tr, err := rest.TransportFor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: ts.Certs.CAPEM}})
	require.NoError(t, err)
	return &http.Client{Transport: tr}
}

func schemaGVR(g, v, r string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: g, Version: v, Resource: r}
}

// cert returns a client config authenticated by a client certificate for
// user in groups, signed by the server's CA.
func (ts *testServer) cert(t testing.TB, user string, groups ...string) *rest.Config {
	t.Helper()
	certPEM, keyPEM, err := ts.Certs.IssueClientCert(user, groups)
	require.NoError(t, err)
	return &rest.Config{Host: ts.URL, TLSClientConfig: rest.TLSClientConfig{
		CAData: ts.Certs.CAPEM, CertData: certPEM, KeyData: keyPEM,
	}, QPS: -1}
}
