package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// describe through the API of `virtkit controller --api-addr`: the VM's
// spec and status, the VMI's conditions and node, the controller's events;
// errors as kubectl's.
func TestDescribeOnAPI(t *testing.T) {
	kc := startAPIController(t, "--nodes", "1", "--heartbeat-interval", "200ms")
	c := cli{t: t, kubeconfig: kc}
	manifest := filepath.Join(t.TempDir(), "vm.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(apiVM), 0o644))
	c.ok("apply", "-f", manifest)
	c.eventually("Running", "get", "vmi", "vm-api")
	c.eventually("SuccessfulCreate", "describe", "vm", "vm-api")

	vm := c.ok("describe", "vm", "vm-api")
	for _, want := range []string{"Name:         vm-api\n", "Namespace:    default\n", "Labels:       app=api-test\n",
		"Kind:         VirtualMachine\n", "  Run Strategy:  Always\n", "Status:\n", "  Conditions:\n",
		"Events:\n  Type    Reason"} {
		assert.Contains(t, vm, want)
	}
	vmi := c.ok("describe", "virtualmachineinstances", "vm-api")
	assert.Contains(t, vmi, "Kind:         VirtualMachineInstance\n")
	assert.Contains(t, vmi, "  Phase:")
	assert.Contains(t, vmi, "Running")
	assert.Contains(t, vmi, "    Type:")
	assert.Regexp(t, `(?m)^  Node Name:\s+\S+$`, vmi)
	node := strings.TrimSpace(c.ok("get", "vmi", "vm-api", "-o", "jsonpath={.status.nodeName}"))
	assert.Contains(t, c.ok("describe", "nodes", node), "Name:         "+node+"\n", "cluster-scoped kinds describe too")

	two := c.ok("describe", "vm", "vm-api", "vm-api")
	assert.Equal(t, 2, strings.Count(two, "Name:         vm-api\n"))
	byLabel := c.ok("describe", "vms", "-l", "app=api-test")
	assert.Equal(t, 1, strings.Count(byLabel, "Name:         vm-api\n"), "by label: %s", byLabel)
	assert.Contains(t, byLabel, "Kind:         VirtualMachine\n")
	assert.Contains(t, c.ok("describe", "vms"), "Name:         vm-api\n", "every VM of the namespace")
	out, errOut, err := c.run(t.Context(), "describe", "vms", "-l", "app=none")
	require.NoError(t, err)
	assert.Empty(t, out)
	assert.Equal(t, "No resources found in default namespace.\n", errOut)
	assert.Contains(t, c.fails("describe", "vms", "vm-api", "-l", "app=none"), "name cannot be provided when a selector is specified")
	assert.Contains(t, c.ok("get", "events"), "SuccessfulCreate", "virtkit get events reads the server's events")
	assert.Contains(t, c.fails("describe", "vm", "nope"), `Error from server (NotFound): virtualmachines.kubevirt.io "nope" not found`)
	assert.Contains(t, c.fails("describe", "gadgets", "x"), `the server doesn't have a resource type "gadgets"`)
	alice := cli{t: t, kubeconfig: tokenUserKubeconfig(t, kc, "alice-token")}
	assert.Contains(t, alice.fails("describe", "vm", "vm-api", "-n", "default"), "Error from server (Forbidden)")
}

// eventuallyNot waits until the command's output is something else than
// old (and not empty).
func (c cli) eventuallyNot(old string, args ...string) {
	c.t.Helper()
	require.Eventually(c.t, func() bool {
		out, _, err := c.run(c.t.Context(), args...)
		return err == nil && out != "" && out != old
	}, 30*time.Second, 100*time.Millisecond, "virtkit %s changes from %q", strings.Join(args, " "), old)
}
