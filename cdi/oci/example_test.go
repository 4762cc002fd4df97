package oci_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/virtkit/virtkit/cdi/oci"
	"github.com/virtkit/virtkit/cdi/oci/ocitest"
)

// Pull the disk of a containerDisk image twice: the second pull comes from
// the digest cache.
func ExamplePuller_Pull() {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img, _ := ocitest.ContainerDisk(map[string][]byte{"disk/disk.img": []byte("disk bytes")})
	if err := ocitest.Push(host+"/vm/disk:v1", img, nil); err != nil {
		fmt.Println(err)
		return
	}
	cache, _ := os.MkdirTemp("", "example-oci-")
	defer os.RemoveAll(cache)
	p, err := oci.New(oci.Options{CacheDir: cache,
		// The example registry runs on loopback, which tenants may not reach by default.
		AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 2 {
		res, err := p.Pull(context.Background(), oci.Request{Image: "docker://" + host + "/vm/disk:v1"})
		if err != nil {
			fmt.Println(err)
			return
		}
		b, _ := os.ReadFile(res.Path)
		fmt.Println(string(b), res.Cached)
	}
	// Output:
	// disk bytes false
	// disk bytes true
}
