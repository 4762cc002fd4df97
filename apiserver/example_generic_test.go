package apiserver_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/store"
)

// Serve a memory store through Kubernetes' generic API server library and
// list its namespaces with client-go, authenticated by the generated admin
// certificate.
func ExampleNewGeneric() {
	dir, err := os.MkdirTemp("", "apiserver-generic-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	certs, err := apiserver.EnsureCertificates(filepath.Join(dir, "pki"), nil)
	if err != nil {
		log.Fatal(err)
	}
	// A store served by a generic API server starts at resourceVersion 1.
	st, err := store.NewMemoryWithOptions(store.Options{StartResourceVersion: 1})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := controller.EnsureNamespaces(ctx, st, virtkit.SystemNamespaces()...); err != nil {
		log.Fatal(err)
	}
	srv, err := apiserver.NewGeneric(apiserver.GenericOptions{
		Store:         st,
		Authenticator: apiserver.ClientCertAuthenticator{},
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

	client, err := kubernetes.NewForConfig(&rest.Config{
		Host: "https://" + ln.Addr().String(),
		TLSClientConfig: rest.TLSClientConfig{
			CAData: certs.CAPEM, CertData: certs.AdminCert, KeyData: certs.AdminKey,
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	namespaces, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, ns := range namespaces.Items {
		fmt.Println(ns.Name)
	}
	// Output:
	// default
	// kube-public
	// kube-system
}
