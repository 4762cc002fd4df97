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

// The CLI against `virtkit controller --api-addr` on etcd with a separate
// node agent: apply, get, the verbs and delete through the API, and
// --store on the same etcd through the API served in-process over it.
func TestCLIOnAPIEtcd(t *testing.T) {
	kc, storeArg := startAPIControllerOnEtcd(t, "cli-node-1")

	c := cli{t: t, kubeconfig: kc}
	manifest := filepath.Join(t.TempDir(), "vm.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(apiVM), 0o644))
	assert.Equal(t, "virtualmachine.kubevirt.io/vm-api created\n", c.ok("apply", "-f", manifest))
	assert.Equal(t, "virtualmachine.kubevirt.io/vm-api unchanged\n", c.ok("apply", "-f", manifest))
	c.eventually("Running", "get", "vm", "vm-api")
	assert.Equal(t, "cli-node-1", c.ok("get", "vmi", "vm-api", "-o", "jsonpath={.status.nodeName}"))

	// --store wins over the kubeconfig: the API served in-process over etcd.
	direct := c.ok("get", "vms", "--store", storeArg)
	assert.Contains(t, direct, "vm-api")

	assert.Equal(t, "VMI vm-api was scheduled to pause\n", c.ok("pause", "vmi", "vm-api"))
	c.eventually("Paused", "get", "vm", "vm-api")
	assert.Equal(t, "VMI vm-api was scheduled to unpause\n", c.ok("unpause", "vmi", "vm-api"))
	c.eventually("Running", "get", "vm", "vm-api")
	assert.Equal(t, "VM vm-api was scheduled to stop\n", c.ok("stop", "vm-api"))
	c.eventually("No resources found", "get", "vmis")
	assert.Equal(t, "VM vm-api was scheduled to start\n", c.ok("start", "vm-api"))
	c.eventually("Running", "get", "vmi", "vm-api")

	alice := cli{t: t, kubeconfig: tokenUserKubeconfig(t, kc, "alice-token")}
	assert.Contains(t, alice.fails("stop", "vm-api"), "Error from server (Forbidden)")
	assert.Contains(t, alice.fails("delete", "-f", manifest), "Error from server (Forbidden)")
	c.eventually("Running", "get", "vm", "vm-api")

	assert.Equal(t, `virtualmachine.kubevirt.io "vm-api" deleted`+"\n", c.ok("delete", "-f", manifest))
	require.Eventually(t, func() bool {
		_, errOut, err := c.run(t.Context(), "get", "vm", "vm-api")
		return err != nil && strings.Contains(errOut, "Error from server (NotFound)")
	}, 30*time.Second, 100*time.Millisecond, "the VM goes once its finalizer is released")
}
