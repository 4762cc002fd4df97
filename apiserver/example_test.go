package apiserver_test

import (
	"fmt"
	"log"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

// Serve a memory store over TLS (serveMemoryStore: EnsureCertificates,
// NewGeneric, Serve) and list its VirtualMachines with client-go,
// authenticated by the generated admin certificate.
func Example() {
	cfg, ctx, stop := serveMemoryStore()
	defer stop()
	client, err := dynamic.NewForConfig(cfg)
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
