package apiserver_test

import (
	"fmt"
	"log"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Serve a memory store through Kubernetes' generic API server library
// (apiserver.NewGeneric, as serveMemoryStore does) and list its namespaces
// with client-go, authenticated by the generated admin certificate.
func ExampleNewGeneric() {
	cfg, ctx, stop := serveMemoryStore()
	defer stop()
	client, err := kubernetes.NewForConfig(cfg)
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
