package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// cli runs virtkit's own cobra commands against a kubeconfig.
type cli struct {
	t          *testing.T
	kubeconfig string
}

func (c cli) run(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	cmd := newRootCmd()
	var out, errOut lockedBuffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(append(args, "--kubeconfig", c.kubeconfig))
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	err = cmd.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

func (c cli) ok(args ...string) string {
	c.t.Helper()
	out, errOut, err := c.run(c.t.Context(), args...)
	require.NoError(c.t, err, "virtkit %s: %s%s", strings.Join(args, " "), out, errOut)
	return out
}

// fails runs a command that must fail with kubectl's status 1 and returns
// its standard error.
func (c cli) fails(args ...string) string {
	c.t.Helper()
	out, errOut, err := c.run(c.t.Context(), args...)
	require.Error(c.t, err, "virtkit %s should fail: %s", strings.Join(args, " "), out)
	var ex exitError
	require.True(c.t, asExit(err, &ex), "kubectl-style exit, got %v", err)
	assert.Equal(c.t, 1, ex.code)
	return errOut
}

func (c cli) eventually(contains string, args ...string) {
	c.t.Helper()
	require.Eventually(c.t, func() bool {
		out, _, _ := c.run(c.t.Context(), args...)
		return strings.Contains(out, contains)
	}, 30*time.Second, 100*time.Millisecond, "virtkit %s shows %q", strings.Join(args, " "), contains)
}

// tokenUserKubeconfig copies the admin kubeconfig with a bearer token
// instead of the admin's client certificate.
func tokenUserKubeconfig(t *testing.T, admin, token string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(admin)
	require.NoError(t, err)
	for name := range cfg.AuthInfos {
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// contextsKubeconfig writes a kubeconfig with two contexts on the admin
// kubeconfig's cluster: admin (namespace default) and alice (a token user,
// namespace team-a, the current context).
func contextsKubeconfig(t *testing.T, admin, token string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(admin)
	require.NoError(t, err)
	var cluster string
	var adminUser *clientcmdapi.AuthInfo
	for _, c := range cfg.Contexts {
		cluster = c.Cluster
		adminUser = cfg.AuthInfos[c.AuthInfo]
	}
	require.NotEmpty(t, cluster)
	cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{"admin": adminUser, "alice": {Token: token}}
	cfg.Contexts = map[string]*clientcmdapi.Context{
		"admin": {Cluster: cluster, AuthInfo: "admin", Namespace: "default"},
		"alice": {Cluster: cluster, AuthInfo: "alice", Namespace: "team-a"},
	}
	cfg.CurrentContext = "alice"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// virtkit's get, apply, delete and virtctl verbs against the API of an
// in-process `virtkit controller --api-addr` on the memory store.
func TestCLIOnAPI(t *testing.T) {
	kc := startAPIController(t, "--nodes", "2", "--heartbeat-interval", "200ms")
	c := cli{t: t, kubeconfig: kc}
	dir := t.TempDir()
	manifest := filepath.Join(dir, "vm.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(apiVM), 0o644))

	// apply: created, unchanged, configured.
	assert.Equal(t, "virtualmachine.kubevirt.io/vm-api created\n", c.ok("apply", "-f", manifest))
	assert.Equal(t, "virtualmachine.kubevirt.io/vm-api unchanged\n", c.ok("apply", "-f", manifest))
	relabeled := filepath.Join(dir, "vm2.yaml")
	require.NoError(t, os.WriteFile(relabeled, []byte(strings.Replace(apiVM, "app: api-test", "app: api-test\n    tier: gold", 1)), 0o644))
	assert.Equal(t, "virtualmachine.kubevirt.io/vm-api configured\n", c.ok("apply", "-f", relabeled))
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte(strings.Replace(apiVM, "runStrategy: Always", "runStrategy: Sometimes", 1)), 0o644))
	invalid := c.fails("apply", "-f", bad)
	assert.Contains(t, invalid, `The VirtualMachine "vm-api" is invalid: spec.runStrategy: `)

	// get: the server's table, wide, name, json, yaml, jsonpath, -l, -A.
	c.eventually("Running", "get", "vms")
	vms := strings.Split(strings.TrimSpace(c.ok("get", "vms")), "\n")
	require.Len(t, vms, 2)
	assert.Equal(t, []string{"NAME", "AGE", "STATUS", "READY"}, strings.Fields(vms[0]))
	assert.Equal(t, "vm-api", strings.Fields(vms[1])[0])
	c.eventually("True", "get", "vmi", "vm-api")
	narrow := strings.Fields(strings.Split(c.ok("get", "vmi", "vm-api"), "\n")[0])
	wide := strings.Fields(strings.Split(c.ok("get", "vmi", "vm-api", "-o", "wide"), "\n")[0])
	assert.Equal(t, []string{"NAME", "AGE", "PHASE", "IP", "NODENAME", "READY"}, narrow)
	assert.Greater(t, len(wide), len(narrow), "wide adds the priority columns: %v", wide)
	all := strings.Split(strings.TrimSpace(c.ok("get", "vmis", "-A")), "\n")
	require.Len(t, all, 2)
	assert.Equal(t, []string{"NAMESPACE", "NAME"}, strings.Fields(all[0])[:2])
	assert.Equal(t, []string{"default", "vm-api"}, strings.Fields(all[1])[:2])
	assert.Equal(t, "virtualmachine.kubevirt.io/vm-api\n", c.ok("get", "vm", "-o", "name", "-l", "tier=gold"))
	assert.Equal(t, "No resources found in default namespace.\n", c.ok("get", "virtualmachines", "-l", "tier=silver"))
	assert.Equal(t, "gold Always", c.ok("get", "vm", "vm-api", "-o", "jsonpath={.metadata.labels.tier} {.spec.runStrategy}"))
	var list struct {
		Kind  string
		Items []struct {
			Status struct{ Phase, NodeName string }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(c.ok("get", "vmis", "-o", "json")), &list))
	assert.Equal(t, "List", list.Kind)
	require.Len(t, list.Items, 1)
	assert.Contains(t, c.ok("get", "vm", "vm-api", "-o", "yaml"), "runStrategy: Always")
	assert.Contains(t, c.fails("get", "vm", "nope"), `Error from server (NotFound): virtualmachines.kubevirt.io "nope" not found`)
	assert.Contains(t, c.fails("get", "gadgets"), `the server doesn't have a resource type "gadgets"`)
	assert.Contains(t, c.fails("get", "vms", "-o", "toml"), "allowed formats")

	// Shell completion of kinds and names, from the API.
	complete := func(args ...string) []string {
		cmd := newRootCmd()
		var out lockedBuffer
		cmd.SetOut(&out)
		cmd.SetErr(&lockedBuffer{})
		cmd.SetArgs(append([]string{"__complete", "--kubeconfig", kc}, args...))
		require.NoError(t, cmd.ExecuteContext(t.Context()))
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		return lines[:len(lines)-1] // the last line is the directive
	}
	assert.Contains(t, complete("get", ""), "virtualmachineinstances")
	assert.Contains(t, complete("get", "virtualm"), "virtualmachines")
	assert.NotContains(t, complete("get", "virtualm"), "nodes")
	assert.Equal(t, []string{"vm-api"}, complete("get", "vms", ""))
	assert.Equal(t, []string{"vm-api"}, complete("delete", "vm", "vm-api", "vm"))
	assert.Equal(t, []string{"vm-api"}, complete("start", "v"))
	assert.Equal(t, []string{"vm", "vmi"}, complete("pause", ""))
	assert.Equal(t, []string{"vm-api"}, complete("pause", "vmi", ""))
	assert.Empty(t, complete("guestosinfo", "x"))

	// get -w prints the changes: pausing shows up in the watched table.
	wctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	watchCmd := newRootCmd()
	var watched lockedBuffer
	watchCmd.SetOut(&watched)
	watchCmd.SetErr(&watched)
	watchCmd.SetArgs([]string{"get", "vm", "vm-api", "-w", "--kubeconfig", kc})
	watchDone := make(chan error, 1)
	go func() { watchDone <- watchCmd.ExecuteContext(wctx) }()
	require.Eventually(t, func() bool { return strings.Contains(watched.String(), "vm-api") }, 30*time.Second, 50*time.Millisecond)

	// virtctl's verbs.
	assert.Equal(t, "VMI vm-api was scheduled to pause\n", c.ok("pause", "vmi", "vm-api"))
	require.Eventually(t, func() bool { return strings.Contains(watched.String(), "Paused") }, 30*time.Second, 50*time.Millisecond,
		"get -w shows the VM Paused: %s", &watched)
	cancel()
	select {
	case err := <-watchDone:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("get -w did not stop with its context")
	}
	assert.Equal(t, 1, strings.Count(watched.String(), "NAME"), "one header: %s", &watched)
	assert.Equal(t, "VM vm-api was scheduled to unpause\n", c.ok("unpause", "vm", "vm-api"))
	c.eventually("Running", "get", "vm", "vm-api")
	assert.Contains(t, c.fails("pause", "vm", "nope"), "Error from server (NotFound)")
	assert.Contains(t, c.fails("pause", "disk", "vm-api"), "want vm or vmi")
	assert.Contains(t, c.fails("start", "vm-api"), "Error from server (Conflict)")

	var osInfo struct{ Hostname string }
	require.Eventually(t, func() bool {
		out, _, err := c.run(t.Context(), "guestosinfo", "vm-api")
		return err == nil && json.Unmarshal([]byte(out), &osInfo) == nil && osInfo.Hostname != ""
	}, 30*time.Second, 100*time.Millisecond, "guestosinfo answers")
	assert.Equal(t, "vm-api", osInfo.Hostname)
	assert.Contains(t, c.ok("userlist", "vm-api"), `"items"`)
	assert.Contains(t, c.ok("fslist", "vm-api"), `"mountPoint"`)
	assert.Equal(t, "VMI vm-api was scheduled to soft reboot\n", c.ok("soft-reboot", "vm-api"))

	node := c.ok("get", "vmi", "vm-api", "-o", "jsonpath={.status.nodeName}")
	require.NotEmpty(t, node)
	assert.Contains(t, c.fails("migrate-cancel", "vm-api"), "Error from server (NotFound)", "no migration to cancel yet")
	assert.Equal(t, "VM vm-api was scheduled to migrate\n", c.ok("migrate", "vm-api"))
	migs := c.ok("get", "vmim", "-o", "name")
	require.Contains(t, migs, "virtualmachineinstancemigration.kubevirt.io/")
	// Cancelling races the simulated migration: either it is cancelled or
	// it has finished and there is nothing left to cancel.
	if out, errOut, err := c.run(t.Context(), "migrate-cancel", "vm-api"); err == nil {
		assert.Contains(t, out, "VM vm-api migration ")
		assert.Contains(t, out, " was cancelled")
	} else {
		assert.Contains(t, errOut, "Error from server (NotFound)")
	}
	c.eventually("", "get", "vmi", "vm-api")

	assert.Contains(t, c.fails("stop", "vm-api", "--grace-period", "0"), "--grace-period: needs --force")
	assert.Equal(t, "VM vm-api was scheduled to stop\n", c.ok("stop", "vm-api", "--force", "--grace-period", "0"))
	c.eventually("No resources found", "get", "vmis")
	assert.Equal(t, "Halted", c.ok("get", "vm", "vm-api", "-o", "jsonpath={.spec.runStrategy}"))
	assert.Contains(t, c.fails("stop", "vm-api"), "Error from server (Conflict)")
	assert.Equal(t, "VM vm-api was scheduled to start\n", c.ok("start", "vm-api"))
	c.eventually("Running", "get", "vmi", "vm-api")
	assert.Equal(t, "VM vm-api was scheduled to restart\n", c.ok("restart", "vm-api"))

	// A user granted only team-a: Forbidden everywhere else, nothing changed.
	alice := cli{t: t, kubeconfig: tokenUserKubeconfig(t, kc, "alice-token")}
	assert.Contains(t, alice.fails("get", "vms"), "Error from server (Forbidden)")
	assert.Contains(t, alice.fails("get", "vms", "-A"), "Error from server (Forbidden)")
	assert.Contains(t, alice.fails("apply", "-f", relabeled, "-n", "default"), "Error from server (Forbidden)")
	assert.Contains(t, alice.fails("delete", "vm", "vm-api"), "Error from server (Forbidden)")
	for _, verb := range [][]string{{"start", "vm-api"}, {"stop", "vm-api"}, {"restart", "vm-api"}, {"migrate", "vm-api"},
		{"migrate-cancel", "vm-api"}, {"pause", "vmi", "vm-api"}, {"unpause", "vmi", "vm-api"}, {"soft-reboot", "vm-api"},
		{"guestosinfo", "vm-api"}, {"userlist", "vm-api"}, {"fslist", "vm-api"}} {
		assert.Contains(t, alice.fails(verb...), "Error from server (Forbidden)", "alice: %v", verb)
	}
	assert.Equal(t, "No resources found in team-a namespace.\n", alice.ok("get", "vms", "-n", "team-a"))
	createNamespace(t, kc, "team-a")
	teamA := filepath.Join(dir, "team-a.yaml")
	require.NoError(t, os.WriteFile(teamA, []byte(strings.Replace(apiVM, "runStrategy: Always", "runStrategy: Halted", 1)), 0o644))
	assert.Equal(t, "virtualmachine.kubevirt.io/vm-api created\n", alice.ok("apply", "-f", teamA, "-n", "team-a"))
	assert.Equal(t, "virtualmachine.kubevirt.io/vm-api\n", alice.ok("get", "vms", "-n", "team-a", "-o", "name"))
	assert.Equal(t, "Always", c.ok("get", "vm", "vm-api", "-o", "jsonpath={.spec.runStrategy}"), "alice changed nothing in default")
	assert.Contains(t, cli{t: t, kubeconfig: tokenUserKubeconfig(t, kc, "wrong")}.fails("get", "vms"), "error: You must be logged in to the server (")

	// --context picks the context and its namespace; $KUBECONFIG is read
	// when --kubeconfig is not given.
	multi := contextsKubeconfig(t, kc, "alice-token")
	both := cli{t: t, kubeconfig: multi}
	assert.Equal(t, "virtualmachine.kubevirt.io/vm-api\n", both.ok("get", "vms", "-o", "name", "--context", "alice"))
	assert.Contains(t, both.fails("get", "vms", "--context", "alice", "-n", "default"), "Error from server (Forbidden)")
	assert.Contains(t, both.ok("get", "vms", "--context", "admin", "-A"), "default")
	assert.Contains(t, both.fails("get", "vms", "--context", "nobody"), `context "nobody" does not exist`)
	t.Setenv("KUBECONFIG", multi)
	envCmd := newRootCmd()
	var envOut lockedBuffer
	envCmd.SetOut(&envOut)
	envCmd.SetErr(&envOut)
	envCmd.SetArgs([]string{"get", "vms", "-o", "name"})
	require.NoError(t, envCmd.ExecuteContext(t.Context()), "%s", &envOut)
	assert.Equal(t, "virtualmachine.kubevirt.io/vm-api\n", envOut.String(), "the current context is alice's, namespace team-a")

	// delete by name and with -f; NotFound is an error.
	// (A VM is gone only once its controller has let it go: until then a
	// second delete finds it terminating and says "deleted", as kubectl.)
	gone := func(args ...string) {
		t.Helper()
		require.Eventually(t, func() bool {
			_, errOut, err := c.run(t.Context(), args...)
			return err != nil && strings.Contains(errOut, "(NotFound)")
		}, 30*time.Second, 50*time.Millisecond, "virtkit %s finds it gone", strings.Join(args, " "))
	}
	assert.Equal(t, `virtualmachine.kubevirt.io "vm-api" deleted`+"\n", c.ok("delete", "vm", "vm-api"))
	gone("get", "vm", "vm-api")
	assert.Contains(t, c.fails("delete", "vm", "vm-api"), `Error from server (NotFound): virtualmachines.kubevirt.io "vm-api" not found`)
	assert.Equal(t, `virtualmachine.kubevirt.io "vm-api" deleted`+"\n", c.ok("delete", "-f", teamA, "-n", "team-a"))
	gone("get", "vm", "vm-api", "-n", "team-a")
	assert.Contains(t, c.fails("delete", "-f", teamA, "-n", "team-a"), "Error from server (NotFound)")
}

// --store wins over a kubeconfig; an empty kubeconfig is reported.
func TestCLIStoreWinsOverKubeconfig(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\n"), 0o600))
	c := cli{t: t, kubeconfig: kc}
	assert.Contains(t, c.fails("get", "vms", "--store", "memory"), "the memory store lives inside one process",
		"--store was used, not the kubeconfig")
	assert.Contains(t, c.fails("get", "vms"), "no kubeconfig", "an empty kubeconfig is reported")
}
