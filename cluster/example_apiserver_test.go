package cluster_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/virtkit/virtkit/cluster"
)

// Serve an embedded cluster's store as the Kubernetes API, as `virtkit
// controller --api-addr` does, and read it with client-go through the
// admin kubeconfig the server wrote.
func ExampleStartAPIServer() {
	dir, err := os.MkdirTemp("", "cluster-apiserver-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	c, err := cluster.New(cluster.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	kubeconfig := filepath.Join(dir, "admin.kubeconfig")
	srv, err := cluster.StartAPIServer(context.Background(), cluster.APIServerOptions{
		Store: c.Store(), Addr: "127.0.0.1:0", CertDir: filepath.Join(dir, "pki"), Kubeconfig: kubeconfig,
		GuestInfo: c.GuestInfo(), LocalNodes: c.Nodes(),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Stop()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		fmt.Println(err)
		return
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	vmis, err := client.RESTClient().Get().AbsPath("/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstances").
		Do(context.Background()).Raw()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.HasPrefix(srv.URL, "https://127.0.0.1:"), strings.Contains(string(vmis), `"kind":"VirtualMachineInstanceList"`))
	// Output: true true
}

// The address a client dials for a listener on every interface.
func ExampleDialAddr() {
	fmt.Println(cluster.DialAddr(&net.TCPAddr{IP: net.IPv4zero, Port: 6443}))
	fmt.Println(cluster.DialAddr(&net.TCPAddr{IP: net.ParseIP("10.0.0.5"), Port: 6443}))
	// Output:
	// 127.0.0.1:6443
	// 10.0.0.5:6443
}
