package apiserver_test

import (
	"context"
	"log"
	"net"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/store"
)

// serveMemoryStore serves a memory store over TLS through NewGeneric on a
// loopback port and returns the client configuration of the generated
// admin certificate, the serving context and a stop function that waits
// for the server to end.
func serveMemoryStore() (*rest.Config, context.Context, func()) {
	dir, err := os.MkdirTemp("", "apiserver-example")
	if err != nil {
		log.Fatal(err)
	}
	certs, err := apiserver.EnsureCertificates(filepath.Join(dir, "pki"), nil)
	if err != nil {
		log.Fatal(err)
	}
	// Kubernetes reads resourceVersion 0 as "any": the store starts at 1.
	st, err := store.NewMemoryWithOptions(store.Options{StartResourceVersion: 1})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	// Objects are written into namespaces that exist.
	if err := controller.EnsureNamespaces(ctx, st, virtkit.SystemNamespaces()...); err != nil {
		log.Fatal(err)
	}
	srv, err := apiserver.NewGeneric(apiserver.GenericOptions{
		Store:         st,
		Authenticator: apiserver.ClientCertAuthenticator{},
		// Authorizer nil: RBAC's bootstrap policy; the admin certificate
		// is in apiserver.AdminGroup.
	})
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, certs.ServerTLSConfig()) }()
	cfg := &rest.Config{
		Host: "https://" + ln.Addr().String(),
		TLSClientConfig: rest.TLSClientConfig{
			CAData: certs.CAPEM, CertData: certs.AdminCert, KeyData: certs.AdminKey,
		},
	}
	return cfg, ctx, func() { cancel(); <-done; _ = os.RemoveAll(dir) }
}
