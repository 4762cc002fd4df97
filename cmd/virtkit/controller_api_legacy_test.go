package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// --api-legacy-server serves the API with the former server: kubectl lists
// VMs, and the server serves no namespaces.
func TestControllerAPILegacyServer(t *testing.T) {
	requireKubectl(t)
	kc := startAPIController(t, "--nodes", "1", "--api-legacy-server")
	k := kubectl{t: t, kubeconfig: kc}
	ctx := t.Context()
	assert.Contains(t, k.ok(ctx, "api-resources"), "virtualmachineinstances")
	assert.Contains(t, k.ok(ctx, "get", "vms"), "No resources found")
	assert.Contains(t, k.fails(ctx, "get", "namespaces"), "the server doesn't have a resource type")
}

// The generic server does not bound watches itself: the legacy server's
// watch flags are refused, naming them.
func TestControllerAPIWatchFlagsNeedLegacy(t *testing.T) {
	_, errOut, code := virtkitProcess(t, "controller", "--nodes", "1", "--api-addr", "127.0.0.1:0",
		"--api-cert-dir", t.TempDir(), "--api-max-watches", "5")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errOut, "--api-max-watches, --api-max-watches-per-user: not supported by the generic API server")
}
