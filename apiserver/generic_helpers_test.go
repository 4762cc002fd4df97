package apiserver_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/store"
)

// genericPolicy lets alice edit team-a.
const genericPolicy = `rules:
- user: alice
  namespaces: [team-a]
`

// startGeneric serves opts.Store (nil: a new memory store) as startServer
// does, with the system namespaces only.
func startGeneric(t testing.TB, opts apiserver.GenericOptions) *testServer {
	t.Helper()
	var st store.Store = opts.Store
	if opts.Store == nil {
		st = newStore(t)
	}
	certs, err := apiserver.EnsureCertificates(t.TempDir(), nil)
	require.NoError(t, err)
	return serveStore(t, st, opts, certs, virtkit.SystemNamespaces())
}

// kubeconfig writes an admin kubeconfig for ts (token: "" is the admin
// certificate) and returns its path.
func (ts *testServer) kubeconfig(t testing.TB, token string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kc := apiserver.Kubeconfig{Server: ts.URL, CAPEM: ts.Certs.CAPEM, User: apiserver.AdminUser, Namespace: "default"}
	if token == "" {
		kc.CertPEM, kc.KeyPEM = ts.Certs.AdminCert, ts.Certs.AdminKey
	} else {
		kc.Token = token
	}
	require.NoError(t, apiserver.WriteKubeconfig(path, kc))
	return path
}

// kubectlRunner runs /usr/bin/kubectl against one kubeconfig.
type kubectlRunner struct {
	t          testing.TB
	kubeconfig string
}

func requireKubectlBinary(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl not installed (Debian package kubernetes-client; hack/realstack/install.sh installs it)")
	}
}

func (k kubectlRunner) run(stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", k.kubeconfig, "--request-timeout", "30s"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG=", "HOME="+k.t.TempDir())
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (k kubectlRunner) ok(stdin string, args ...string) string {
	k.t.Helper()
	out, err := k.run(stdin, args...)
	require.NoError(k.t, err, "kubectl %s: %s", strings.Join(args, " "), out)
	return out
}

func (k kubectlRunner) fails(stdin string, args ...string) string {
	k.t.Helper()
	out, err := k.run(stdin, args...)
	require.Error(k.t, err, "kubectl %s should fail: %s", strings.Join(args, " "), out)
	return out
}

// vmManifest is a VM in namespace ns named name.
func vmManifest(ns, name, runStrategy string) string {
	return fmt.Sprintf(`apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: %s
  namespace: %s
  labels: {app: generic}
spec:
  runStrategy: %s
  template:
    metadata:
      labels: {kubevirt.io/vm: %s}
    spec:
      domain:
        devices: {}
        memory: {guest: 128Mi}
      volumes:
      - name: containerdisk
        containerDisk: {image: quay.io/kubevirt/cirros-container-disk-demo}
`, name, ns, runStrategy, name)
}

// anonymousAdmin returns a plain HTTP client authenticated by the admin
// certificate.
func (ts *testServer) anonymousAdmin(t testing.TB) *http.Client {
	t.Helper()
	tr, err := rest.TransportFor(ts.admin())
	require.NoError(t, err)
	return &http.Client{Transport: tr}
}
