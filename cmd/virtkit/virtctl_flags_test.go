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

// virtctl's flags: --dry-run changes nothing (and still answers NotFound),
// start --paused, migrate --addedNodeSelector, restart --force
// --grace-period.
func TestVirtctlFlags(t *testing.T) {
	kc := startAPIController(t, "--nodes", "2", "--heartbeat-interval", "200ms")
	c := cli{t: t, kubeconfig: kc}
	manifest := filepath.Join(t.TempDir(), "vm.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(strings.Replace(apiVM, "runStrategy: Always", "runStrategy: Halted", 1)), 0o644))
	c.ok("apply", "-f", manifest)
	rv := func() string { return c.ok("get", "vm", "vm-api", "-o", "jsonpath={.metadata.resourceVersion}") }

	// A dry run changes nothing; a dry run on a missing VM is NotFound.
	before := rv()
	assert.Equal(t, "Dry Run execution\nVM vm-api was scheduled to start\n", c.ok("start", "vm-api", "--dry-run"))
	assert.Equal(t, before, rv(), "a dry-run start does not touch the VM")
	assert.Equal(t, "Halted", c.ok("get", "vm", "vm-api", "-o", "jsonpath={.spec.runStrategy}"))
	assert.Contains(t, c.fails("start", "nope", "--dry-run"), `Error from server (NotFound): virtualmachines.subresources.kubevirt.io "nope" not found`)

	// start --paused: the instance comes up paused.
	assert.Equal(t, "VM vm-api was scheduled to start\n", c.ok("start", "vm-api", "--paused"))
	c.eventually("Paused", "get", "vm", "vm-api")
	assert.Equal(t, "Dry Run execution\nVMI vm-api was scheduled to unpause\n", c.ok("unpause", "vmi", "vm-api", "--dry-run"))
	c.eventually("Paused", "get", "vm", "vm-api")
	c.ok("unpause", "vmi", "vm-api")
	c.eventually("Running", "get", "vm", "vm-api")
	assert.Contains(t, c.fails("pause", "vmi", "nope", "--dry-run"), "Error from server (NotFound)")
	c.ok("pause", "vmi", "vm-api", "--dry-run")
	assert.NotContains(t, c.ok("get", "vm", "vm-api"), "Paused", "a dry-run pause does not pause")

	// migrate --addedNodeSelector reaches the migration's spec; a dry run
	// creates no migration.
	c.ok("migrate", "vm-api", "--dry-run")
	assert.Equal(t, "No resources found in default namespace.\n", c.ok("get", "vmim"))
	assert.Equal(t, "VM vm-api was scheduled to migrate\n", c.ok("migrate", "vm-api", "--addedNodeSelector", "zone=nowhere"))
	assert.Equal(t, "nowhere", c.ok("get", "vmim", "-o", "jsonpath={.items[0].spec.addedNodeSelector.zone}"))

	// restart and stop take --force with --grace-period, both or neither.
	assert.Contains(t, c.fails("restart", "vm-api", "--grace-period", "0"), "--grace-period: needs --force")
	assert.Contains(t, c.fails("restart", "vm-api", "--force"), "--force: needs --grace-period")
	assert.Contains(t, c.fails("restart", "vm-api", "--force", "--grace-period", "-3"), "must not be negative")
	uid := c.ok("get", "vmi", "vm-api", "-o", "jsonpath={.metadata.uid}")
	require.NotEmpty(t, uid)
	assert.Equal(t, "Dry Run execution\nVM vm-api was scheduled to restart\n", c.ok("restart", "vm-api", "--force", "--grace-period", "0", "--dry-run"))
	assert.Equal(t, uid, c.ok("get", "vmi", "vm-api", "-o", "jsonpath={.metadata.uid}"), "a dry-run restart keeps the instance")
	// The start request may still be pending on the VM: KubeVirt answers
	// Conflict until it is done, so retry.
	require.Eventually(t, func() bool {
		out, _, err := c.run(t.Context(), "restart", "vm-api", "--force", "--grace-period", "0")
		return err == nil && out == "VM vm-api was scheduled to restart\n"
	}, 30*time.Second, 200*time.Millisecond, "restart --force --grace-period 0")
	c.eventuallyNot(uid, "get", "vmi", "vm-api", "-o", "jsonpath={.metadata.uid}")
	c.eventually("Running", "get", "vmi", "vm-api")
	c.ok("stop", "vm-api", "--force", "--grace-period", "0", "--dry-run")
	assert.Equal(t, "Always", c.ok("get", "vm", "vm-api", "-o", "jsonpath={.spec.runStrategy}"), "a dry-run stop keeps the VM running")
}
