package ocitest

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"golang.org/x/crypto/bcrypt"
)

// Binary is Debian's registry binary.
const Binary = "docker-registry"

// Registry is a running docker-registry.
type Registry struct {
	// Host is host:port on loopback.
	Host string
	// User and Password are set when the registry requires them.
	User, Password string
}

// Start runs docker-registry with a temporary configuration and storage
// on a free loopback port until the test ends; it skips the test when the
// binary is missing. With user set, the registry requires basic auth.
func Start(tb testing.TB, user, password string) *Registry {
	tb.Helper()
	bin, err := exec.LookPath(Binary)
	if err != nil {
		tb.Skipf("%s not installed (hack/realstack/install.sh installs the docker-registry package)", Binary)
	}
	dir := tb.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	auth := ""
	if user != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "htpasswd"), fmt.Appendf(nil, "%s:%s\n", user, hash), 0o600); err != nil {
			tb.Fatal(err)
		}
		auth = fmt.Sprintf("auth:\n  htpasswd:\n    realm: virtkit-test\n    path: %s\n", filepath.Join(dir, "htpasswd"))
	}
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\nhttp:\n  addr: %s\n%s",
		filepath.Join(dir, "data"), addr, auth)
	if err := os.WriteFile(filepath.Join(dir, "config.yml"), []byte(cfg), 0o600); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", filepath.Join(dir, "config.yml"))
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case <-done:
			tb.Fatalf("docker-registry exited: %s", logs.String())
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("docker-registry did not answer on %s: %v\n%s", addr, err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return &Registry{Host: addr, User: user, Password: password}
}

// Auth is the registry's authenticator (anonymous without a user).
func (r *Registry) Auth() authn.Authenticator {
	if r.User == "" {
		return authn.Anonymous
	}
	return authn.FromConfig(authn.AuthConfig{Username: r.User, Password: r.Password})
}

// ContainerDisk builds a KubeVirt-format containerDisk image: one layer
// holding each file (path -> content), owned by uid 107 as KubeVirt's are.
func ContainerDisk(files map[string][]byte) (v1.Image, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "disk/", Typeflag: tar.TypeDir, Mode: 0o555, Uid: 107, Gid: 107}); err != nil {
		return nil, err
	}
	for p, b := range files {
		if err := tw.WriteHeader(&tar.Header{Name: p, Typeflag: tar.TypeReg, Mode: 0o440, Size: int64(len(b)), Uid: 107, Gid: 107}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(b); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		return nil, err
	}
	return mutate.AppendLayers(empty.Image, layer)
}

// Push writes img to ref with auth (nil: anonymous).
func Push(ref string, img v1.Image, auth authn.Authenticator) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	if auth == nil {
		auth = authn.Anonymous
	}
	return remote.Write(r, img, remote.WithAuth(auth))
}
