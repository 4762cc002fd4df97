package apiserver_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/virtkit/virtkit/apiserver"
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

// startServer serves st with the admin certificate, alice's token (she may
// use namespace team-a) and opts' other settings.
func startServer(t testing.TB, st store.Store, opts apiserver.Options) *testServer {
	t.Helper()
	certs, err := apiserver.EnsureCertificates(t.TempDir(), nil)
	require.NoError(t, err)
	return startServerWith(t, st, opts, certs)
}

// startServerWith is startServer with given certificates.
func startServerWith(t testing.TB, st store.Store, opts apiserver.Options, certs *apiserver.Certificates) *testServer {
	t.Helper()
	tokens, err := apiserver.ParseTokenFile(stringsReader(testTokens))
	require.NoError(t, err)
	opts.Store = st
	if opts.Authenticator == nil {
		opts.Authenticator = apiserver.Authenticators{apiserver.ClientCertAuthenticator{}, tokens}
	}
	if opts.Authorizer == nil {
		opts.Authorizer = &apiserver.Policy{Rules: []apiserver.PolicyRule{{User: "alice", Namespaces: []string{"team-a"}}}}
	}
	srv, err := apiserver.New(opts)
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
	return &testServer{URL: "https://" + ln.Addr().String(), Certs: certs, Store: st}
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
