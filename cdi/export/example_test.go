package export_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"github.com/virtkit/virtkit/cdi/export"
)

// Serve one raw disk image over HTTPS on loopback and download it with
// the token.
func Example() {
	dir, _ := os.MkdirTemp("", "export-example")
	defer os.RemoveAll(dir)
	img := filepath.Join(dir, "disk.img")
	_ = os.WriteFile(img, make([]byte, 1<<20), 0o600)

	m, err := export.NewManager(export.ManagerOptions{AllowedDirs: []string{dir}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	ep, err := m.Ensure(context.Background(), "default", "my-export", []byte("token"), []export.Volume{{Name: "disk", Path: img}})
	if err != nil {
		fmt.Println(err)
		return
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: m.CA().Pool()}}}
	req, _ := http.NewRequest(http.MethodGet, ep.InternalURL+"/volumes/disk/disk.img", nil)
	req.Header.Set(export.TokenHeader, "token")
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	n, _ := io.Copy(io.Discard, resp.Body)
	fmt.Println(resp.Status, n)
	// Output: 200 OK 1048576
}
