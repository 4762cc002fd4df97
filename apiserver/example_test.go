package apiserver_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/store"
)

// Serve a memory store over TLS and list its VirtualMachines with
// client-go, authenticated by the generated admin certificate.
func Example() {
	dir, err := os.MkdirTemp("", "apiserver-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
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
	defer func() { cancel(); <-done }()

	client, err := dynamic.NewForConfig(&rest.Config{
		Host: "https://" + ln.Addr().String(),
		TLSClientConfig: rest.TLSClientConfig{
			CAData: certs.CAPEM, CertData: certs.AdminCert, KeyData: certs.AdminKey,
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	vms, err := client.Resource(vmGVR).Namespace("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(vms.Items), "virtual machines")
	// Output: 0 virtual machines
}
