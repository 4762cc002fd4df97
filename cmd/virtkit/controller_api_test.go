package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/virtkit/virtkit/store/etcd/etcdtest"
)

const apiVM = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: vm-api
  labels:
    app: api-test
spec:
  runStrategy: Always
  template:
    metadata:
      labels:
        kubevirt.io/vm: vm-api
    spec:
      domain:
        devices: {}
        memory:
          guest: 128Mi
      volumes:
      - name: containerdisk
        containerDisk:
          image: quay.io/kubevirt/cirros-container-disk-demo
`

const apiTokens = `admin-token,ops,1001,"system:masters"
alice-token,alice,1002,"team"
`

const apiPolicy = `rules:
- user: alice
  namespaces: [team-a]
`

// kubectl runs Debian's kubectl (package kubernetes-client) against the
// kubeconfig and returns its combined output.
type kubectl struct {
	t          *testing.T
	kubeconfig string
}

func (k kubectl) run(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", k.kubeconfig, "--request-timeout", "30s"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (k kubectl) ok(ctx context.Context, args ...string) string {
	k.t.Helper()
	out, err := k.run(ctx, args...)
	require.NoError(k.t, err, "kubectl %s: %s", strings.Join(args, " "), out)
	return out
}

func (k kubectl) fails(ctx context.Context, args ...string) string {
	k.t.Helper()
	out, err := k.run(ctx, args...)
	require.Error(k.t, err, "kubectl %s should fail: %s", strings.Join(args, " "), out)
	return out
}

// startAPIController runs `virtkit controller --api-addr` in-process with
// extra args and returns the admin kubeconfig it wrote.
func startAPIController(t *testing.T, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(apiTokens), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte(apiPolicy), 0o600))
	kc := filepath.Join(dir, "admin.kubeconfig")
	cmd := newRootCmd()
	var out lockedBuffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append([]string{"controller", "--api-addr", "127.0.0.1:0", "--api-cert-dir", filepath.Join(dir, "pki"),
		"--api-token-file", filepath.Join(dir, "tokens.csv"), "--api-policy-file", filepath.Join(dir, "policy.yaml"),
		"--write-kubeconfig", kc}, args...))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Error("controller did not stop")
		}
	})
	require.Eventually(t, func() bool {
		_, err := os.Stat(kc)
		return err == nil && strings.Contains(out.String(), "api: https://")
	}, time.Minute, 20*time.Millisecond, "the controller writes its kubeconfig: %s", &out)
	return kc
}

func requireKubectl(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl not installed (Debian package kubernetes-client; hack/realstack/install.sh installs it)")
	}
}

// Debian's kubectl, unmodified, drives the control plane through
// `virtkit controller --api-addr`: apply a KubeVirt manifest, list VMs and
// VMIs as tables and JSON, watch the VMI to Running, patch, delete, and
// get Invalid, Forbidden and Unauthorized where due.
func TestControllerAPIKubectl(t *testing.T) {
	requireKubectl(t)
	t.Run("memory", func(t *testing.T) {
		kc := startAPIController(t, "--nodes", "1", "--heartbeat-interval", "200ms")
		kubectlScenario(t, kc, true)
	})
	t.Run("etcd", func(t *testing.T) {
		kc, _ := startAPIControllerOnEtcd(t, "api-node-1")
		kubectlScenario(t, kc, false)
	})
}

// startAPIControllerOnEtcd starts a real etcd, `virtkit controller
// --api-addr` on it and one `virtkit node --hypervisor sim` process named
// nodeName; it returns the admin kubeconfig and the --store argument.
// nodeArgs are extra flags of the node agent.
func startAPIControllerOnEtcd(t *testing.T, nodeName string, nodeArgs ...string) (kubeconfig, storeArg string) {
	t.Helper()
	endpoints := etcdtest.StartServer(t)
	storeArg = "etcd://" + strings.TrimPrefix(endpoints[0], "http://")
	kubeconfig = startAPIController(t, "--store", storeArg, "--leader-ttl", "5s")
	node := newRootCmd()
	var out lockedBuffer
	node.SetOut(&out)
	node.SetErr(&out)
	node.SetArgs([]string{"node", "--name", nodeName, "--store", storeArg, "--hypervisor", "sim",
		"--heartbeat-interval", "200ms", "--status-interval", "200ms"})
	if len(nodeArgs) > 0 {
		// An argument "PKI" names the controller's certificate directory.
		for i, a := range nodeArgs {
			if a == "PKI" {
				nodeArgs[i] = filepath.Join(filepath.Dir(kubeconfig), "pki")
			}
		}
		node.SetArgs(append([]string{"node", "--name", nodeName, "--store", storeArg, "--hypervisor", "sim",
			"--heartbeat-interval", "200ms", "--status-interval", "200ms"}, nodeArgs...))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- node.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("node did not stop")
		}
	})
	return kubeconfig, storeArg
}

func kubectlScenario(t *testing.T, kc string, guestInfo bool) {
	ctx := t.Context()
	k := kubectl{t: t, kubeconfig: kc}
	manifest := filepath.Join(t.TempDir(), "vm.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(apiVM), 0o644))

	assert.Contains(t, k.ok(ctx, "api-resources"), "virtualmachineinstances")
	assert.Contains(t, k.ok(ctx, "apply", "-f", manifest), "virtualmachine.kubevirt.io/vm-api created")
	// Applying again changes nothing (kubectl may still send the defaulted
	// lists back: a no-op update keeps the resourceVersion).
	rv := k.ok(ctx, "get", "vm", "vm-api", "-o", "jsonpath={.metadata.generation}")
	assert.Contains(t, k.ok(ctx, "apply", "-f", manifest), "virtualmachine.kubevirt.io/vm-api")
	assert.Equal(t, rv, k.ok(ctx, "get", "vm", "vm-api", "-o", "jsonpath={.metadata.generation}"))

	// Watch the VMI to Running, with a timeout.
	require.Eventually(t, func() bool {
		_, err := k.run(ctx, "get", "vmi", "vm-api")
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "the VMI is created")
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	watch := exec.CommandContext(wctx, "kubectl", "--kubeconfig", kc, "get", "vmi", "vm-api", "-w")
	stdout, err := watch.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, watch.Start())
	running := false
	var lines []string
	for sc := bufio.NewScanner(stdout); sc.Scan(); {
		lines = append(lines, sc.Text())
		if f := strings.Fields(sc.Text()); len(f) >= 3 && f[0] == "vm-api" && f[2] == "Running" {
			running = true
			break
		}
	}
	cancel()
	_ = watch.Wait()
	require.True(t, running, "kubectl get vmi -w shows Running: %q", lines)
	require.NotEmpty(t, lines)
	assert.Equal(t, []string{"NAME", "AGE", "PHASE", "IP", "NODENAME", "READY"}, strings.Fields(lines[0]))

	// Tables with KubeVirt's printer columns.
	require.Eventually(t, func() bool {
		out, _ := k.run(ctx, "get", "vms")
		return strings.Contains(out, "Running")
	}, 30*time.Second, 100*time.Millisecond)
	vms := strings.Split(strings.TrimSpace(k.ok(ctx, "get", "vms")), "\n")
	require.Len(t, vms, 2)
	assert.Equal(t, []string{"NAME", "AGE", "STATUS", "READY"}, strings.Fields(vms[0]))
	assert.Equal(t, "vm-api", strings.Fields(vms[1])[0])
	assert.Equal(t, "Running", strings.Fields(vms[1])[2])
	vmis := strings.Split(strings.TrimSpace(k.ok(ctx, "get", "vmis", "-A")), "\n")
	require.Len(t, vmis, 2)
	assert.Equal(t, []string{"NAMESPACE", "NAME", "AGE", "PHASE", "IP", "NODENAME", "READY"}, strings.Fields(vmis[0]))
	assert.Equal(t, []string{"default", "vm-api"}, strings.Fields(vmis[1])[:2])

	// JSON output and selectors.
	var list struct {
		Items []struct {
			Metadata struct{ Name, Namespace string }
			Status   struct{ Phase, NodeName string }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(k.ok(ctx, "get", "vmis", "-o", "json")), &list))
	require.Len(t, list.Items, 1)
	assert.Equal(t, "Running", list.Items[0].Status.Phase)
	node := list.Items[0].Status.NodeName
	assert.Contains(t, k.ok(ctx, "get", "vmis", "--field-selector", "status.nodeName="+node), "vm-api")
	assert.Contains(t, k.ok(ctx, "get", "vmis", "--field-selector", "status.phase=Pending"), "No resources found")
	assert.Contains(t, k.ok(ctx, "get", "vms", "-l", "app=api-test", "-o", "name"), "virtualmachine.kubevirt.io/vm-api")
	assert.Contains(t, k.fails(ctx, "get", "vmis", "--field-selector", "spec.domain=x"), "field label not supported")

	// virtctl's subresources, through kubectl's raw requests.
	sub := "/apis/subresources.kubevirt.io/v1/namespaces/default/"
	empty := filepath.Join(t.TempDir(), "empty.json")
	require.NoError(t, os.WriteFile(empty, []byte("{}"), 0o644))
	k.ok(ctx, "replace", "--raw", sub+"virtualmachineinstances/vm-api/pause", "-f", empty)
	require.Eventually(t, func() bool {
		out, _ := k.run(ctx, "get", "vm", "vm-api")
		return strings.Contains(out, "Paused")
	}, 30*time.Second, 100*time.Millisecond, "the VM shows Paused")
	k.ok(ctx, "replace", "--raw", sub+"virtualmachineinstances/vm-api/unpause", "-f", empty)
	require.Eventually(t, func() bool {
		out, _ := k.run(ctx, "get", "vm", "vm-api")
		return strings.Contains(out, "Running")
	}, 30*time.Second, 100*time.Millisecond, "the VM runs again")
	assert.Contains(t, k.fails(ctx, "replace", "--raw", sub+"virtualmachines/vm-api/start", "-f", empty), "Conflict")
	if guestInfo {
		var gi struct {
			Hostname string
			OS       struct{ Name string }
		}
		require.Eventually(t, func() bool {
			out, err := k.run(ctx, "get", "--raw", sub+"virtualmachineinstances/vm-api/guestosinfo")
			return err == nil && json.Unmarshal([]byte(out), &gi) == nil && gi.Hostname != ""
		}, 30*time.Second, 100*time.Millisecond, "guestosinfo answers")
		assert.Equal(t, "vm-api", gi.Hostname)
		assert.Contains(t, k.ok(ctx, "get", "--raw", sub+"virtualmachineinstances/vm-api/userlist"), `"items"`)
		assert.Contains(t, k.ok(ctx, "get", "--raw", sub+"virtualmachineinstances/vm-api/filesystemlist"), `"mountPoint"`)
	}

	// Invalid: the field path comes back.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte(strings.Replace(apiVM, "runStrategy: Always", "runStrategy: Sometimes", 1)), 0o644))
	out := k.fails(ctx, "apply", "-f", bad)
	assert.Contains(t, out, "spec.runStrategy")
	assert.Contains(t, out, "is invalid")

	// Patch (merge and JSON patch): stop the VM, the VMI goes away.
	assert.Contains(t, k.ok(ctx, "patch", "vm", "vm-api", "--type", "merge", "-p", `{"spec":{"runStrategy":"Halted"}}`),
		"virtualmachine.kubevirt.io/vm-api patched")
	require.Eventually(t, func() bool {
		out, _ := k.run(ctx, "get", "vmis")
		return strings.Contains(out, "No resources found")
	}, 30*time.Second, 100*time.Millisecond, "the VMI stops")
	k.ok(ctx, "patch", "vm", "vm-api", "--type", "json", "-p", `[{"op":"add","path":"/metadata/labels/tier","value":"gold"}]`)
	assert.Contains(t, k.ok(ctx, "get", "vm", "vm-api", "-o", "jsonpath={.metadata.labels.tier} {.spec.runStrategy}"), "gold Halted")

	// Authorization: alice may use team-a only, which an admin creates.
	assert.Contains(t, k.ok(ctx, "create", "namespace", "team-a"), "namespace/team-a created")
	aliceKC := kubectl{t: t, kubeconfig: tokenKubeconfig(t, kc, "alice-token")}
	assert.Contains(t, aliceKC.fails(ctx, "get", "vms", "-n", "default"), "Forbidden")
	assert.Contains(t, aliceKC.fails(ctx, "get", "vms", "-A"), "Forbidden")
	assert.Contains(t, aliceKC.fails(ctx, "delete", "vm", "vm-api", "-n", "default"), "Forbidden")
	assert.Contains(t, aliceKC.fails(ctx, "patch", "vm", "vm-api", "-n", "default", "--type", "merge", "-p", `{"metadata":{"labels":{"x":"y"}}}`), "Forbidden")
	assert.Contains(t, aliceKC.fails(ctx, "apply", "-n", "default", "-f", manifest), "Forbidden")
	assert.Contains(t, aliceKC.fails(ctx, "replace", "--raw", sub+"virtualmachines/vm-api/start", "-f", empty), "Forbidden")
	assert.Contains(t, aliceKC.ok(ctx, "get", "vms", "-n", "team-a"), "No resources found")
	assert.Contains(t, aliceKC.ok(ctx, "apply", "-n", "team-a", "-f", manifest), "created")
	assert.NotContains(t, k.ok(ctx, "get", "vm", "vm-api", "-o", "jsonpath={.metadata.labels}"), `"x"`, "nothing changed")
	assert.Contains(t, kubectl{t: t, kubeconfig: tokenKubeconfig(t, kc, "wrong")}.fails(ctx, "get", "vms"),
		"You must be logged in to the server")

	// Delete; NotFound afterwards.
	assert.Contains(t, k.ok(ctx, "delete", "vm", "vm-api"), `virtualmachine.kubevirt.io "vm-api" deleted`)
	assert.Contains(t, k.fails(ctx, "get", "vm", "vm-api"), "NotFound")
}

// createNamespace creates a namespace through the API of kubeconfig, as a
// Kubernetes user does before writing into it.
func createNamespace(t *testing.T, kubeconfig, name string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// tokenKubeconfig writes a copy of the admin kubeconfig that authenticates
// with token instead (none when token is "").
func tokenKubeconfig(t *testing.T, admin, token string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	data, err := os.ReadFile(admin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o600))
	k := kubectl{t: t, kubeconfig: path}
	k.ok(t.Context(), "config", "unset", "users."+"virtkit-admin"+".client-certificate-data")
	k.ok(t.Context(), "config", "unset", "users."+"virtkit-admin"+".client-key-data")
	if token != "" {
		k.ok(t.Context(), "config", "set-credentials", "virtkit-admin", "--token", token)
	}
	return path
}
