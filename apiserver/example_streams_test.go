package apiserver_test

import (
	"fmt"
	"os"

	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/store"
)

// A server that proxies console, VNC and port-forward streams to node
// agents: its client certificate for their endpoints comes from the same
// CA that issues the agents' serving certificates.
func ExampleCertificates_NodeTLSConfig() {
	dir, err := os.MkdirTemp("", "pki")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	certs, err := apiserver.EnsureCertificates(dir, nil)
	if err != nil {
		panic(err)
	}
	nodeTLS, err := certs.NodeTLSConfig()
	if err != nil {
		panic(err)
	}
	// A node agent's endpoint certificate (node.EndpointTLSConfig serves it).
	if _, _, err := certs.IssueServingCert("virtkit-node-n1", []string{"10.0.0.5"}); err != nil {
		panic(err)
	}
	st, err := store.NewMemoryWithOptions(store.Options{StartResourceVersion: 1})
	if err != nil {
		panic(err)
	}
	srv, err := apiserver.NewGeneric(apiserver.GenericOptions{Store: st, NodeTLS: nodeTLS})
	fmt.Println(srv != nil, err, nodeTLS.Certificates[0].Leaf.Subject.CommonName)
	// Output: true <nil> virtkit:apiserver
}
