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

// Debian's kubectl, unmodified: describe shows a VM's spec, status and the
// controller's events (read through the core/v1 view of the events), and
// get events lists them.
func TestKubectlDescribeAndEvents(t *testing.T) {
	requireKubectl(t)
	kc := startAPIController(t, "--nodes", "1", "--heartbeat-interval", "200ms")
	k := kubectl{t: t, kubeconfig: kc}
	ctx := t.Context()
	manifest := filepath.Join(t.TempDir(), "vm.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(apiVM), 0o644))
	k.ok(ctx, "apply", "-f", manifest)

	var out string
	require.Eventually(t, func() bool {
		out, _ = k.run(ctx, "describe", "vm", "vm-api")
		return strings.Contains(out, "SuccessfulCreate")
	}, 30*time.Second, 200*time.Millisecond, "kubectl describe shows the VM's events: %s", out)
	assert.Contains(t, out, "Name:         vm-api")
	assert.Contains(t, out, "Run Strategy:")
	assert.Regexp(t, `(?m)^Events:\n\s+Type\s+Reason\s+Age\s+From\s+Message\n`, out)
	require.Eventually(t, func() bool {
		out, _ = k.run(ctx, "describe", "vmi", "vm-api")
		return strings.Contains(out, "Phase:") && strings.Contains(out, "Running") && strings.Contains(out, "Events:")
	}, 30*time.Second, 200*time.Millisecond, "kubectl describe vmi: %s", out)

	events := k.ok(ctx, "get", "events")
	assert.Equal(t, []string{"LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"}, strings.Fields(strings.Split(events, "\n")[0]))
	assert.Contains(t, events, "SuccessfulCreate")
	assert.Contains(t, events, "virtualmachine/vm-api")
	assert.Contains(t, k.ok(ctx, "get", "events", "--field-selector", "involvedObject.kind=VirtualMachine", "-o", "name"), "event/")
	assert.Contains(t, k.ok(ctx, "get", "events.events.k8s.io", "-o", "name"), "event.events.k8s.io/")
	assert.Contains(t, k.fails(ctx, "delete", "events", "--all"), "MethodNotAllowed")

	alice := kubectl{t: t, kubeconfig: tokenKubeconfig(t, kc, "alice-token")}
	assert.Contains(t, alice.fails(ctx, "get", "events", "-n", "default"), "Forbidden")
}
