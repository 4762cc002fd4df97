package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const drainVMs = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: vm-live
spec:
  runStrategy: Always
  template:
    spec:
      evictionStrategy: LiveMigrate
      domain:
        devices:
          interfaces:
          - name: default
            masquerade: {}
        memory:
          guest: 64Mi
      networks:
      - name: default
        pod: {}
---
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: vm-none
spec:
  runStrategy: Always
  template:
    spec:
      evictionStrategy: None
      domain:
        devices: {}
        memory:
          guest: 64Mi
`

// Debian's kubectl drains a node of `virtkit controller --nodes 2` as it
// drains a KubeVirt node: it lists the node's virt-launcher pods and
// evicts them; the LiveMigrate VMI's eviction is refused (429) while the
// VMI live-migrates to the other node, and the None VMI is shut down and
// started again elsewhere by its VM.
func TestKubectlDrainEvictsLauncherPods(t *testing.T) {
	requireKubectl(t)
	kc := startAPIController(t, "--nodes", "2", "--heartbeat-interval", "200ms")
	k := kubectl{t: t, kubeconfig: kc}
	ctx := t.Context()
	jsonpath := func(args ...string) string {
		out, err := k.run(ctx, args...)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(out)
	}

	// Both VMs start on node-1.
	k.ok(ctx, "cordon", "node-2")
	manifest := filepath.Join(t.TempDir(), "vms.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(drainVMs), 0o600))
	k.ok(ctx, "apply", "-f", manifest)
	require.Eventually(t, func() bool {
		return jsonpath("get", "vmi", "vm-live", "-o", `jsonpath={.status.phase}/{.status.nodeName}/{.status.conditions[?(@.type=="LiveMigratable")].status}`) == "Running/node-1/True" &&
			jsonpath("get", "vmi", "vm-none", "-o", "jsonpath={.status.phase}/{.status.nodeName}") == "Running/node-1"
	}, 60*time.Second, 200*time.Millisecond, "both VMIs run on node-1")
	k.ok(ctx, "uncordon", "node-2")
	liveUID := jsonpath("get", "vmi", "vm-live", "-o", "jsonpath={.metadata.uid}")
	noneUID := jsonpath("get", "vmi", "vm-none", "-o", "jsonpath={.metadata.uid}")

	out := k.ok(ctx, "get", "pods", "-o", "wide")
	assert.Regexp(t, `(?m)^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES$`, out)
	assert.Regexp(t, `(?m)^virt-launcher-vm-live-[a-z0-9]{5}\s+1/1\s+Running\s+0\s+\S+\s+\S+\s+node-1\s`, out)
	assert.Regexp(t, `(?m)^virt-launcher-vm-none-[a-z0-9]{5}\s+1/1\s+Running\s+0\s+\S+\s+\S+\s+node-1\s`, out)
	out = k.ok(ctx, "get", "pods", "-l", "kubevirt.io/created-by="+liveUID, "-o", "jsonpath={.items[*].metadata.ownerReferences[0].name}")
	assert.Equal(t, "vm-live", out)

	// Evicting needs create on pods/eviction: alice has rights in team-a
	// only, and her eviction changes nothing.
	nonePod := k.ok(ctx, "get", "pods", "-l", "vm.kubevirt.io/name=vm-none", "-o", "jsonpath={.items[0].metadata.name}")
	eviction := filepath.Join(t.TempDir(), "eviction.json")
	require.NoError(t, os.WriteFile(eviction, []byte(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"`+nonePod+`","namespace":"default"}}`), 0o600))
	alice := kubectl{t: t, kubeconfig: tokenKubeconfig(t, kc, "alice-token")}
	assert.Contains(t, alice.fails(ctx, "create", "--raw", "/api/v1/namespaces/default/pods/"+nonePod+"/eviction", "-f", eviction),
		`cannot create resource "pods/eviction"`)
	assert.Equal(t, noneUID, jsonpath("get", "vmi", "vm-none", "-o", "jsonpath={.metadata.uid}"))

	dctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	out, err := k.run(dctx, "drain", "node-1", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout", "60s")
	require.NoError(t, err, out)
	assert.Contains(t, out, "node/node-1 cordoned")
	assert.Regexp(t, `pod/virt-launcher-vm-none-[a-z0-9]{5} evicted`, out)
	assert.Regexp(t, `Eviction triggered evacuation of VMI "default/vm-live"`, out, "the 429 kubectl retried")
	assert.Contains(t, out, "node/node-1 drained")

	// The LiveMigrate VMI moved (the same VMI, live); the None VMI was
	// shut down and its VM started a new one on node-2.
	assert.Equal(t, "Running/node-2/"+liveUID, jsonpath("get", "vmi", "vm-live", "-o", "jsonpath={.status.phase}/{.status.nodeName}/{.metadata.uid}"))
	require.Eventually(t, func() bool {
		got := jsonpath("get", "vmi", "vm-none", "-o", "jsonpath={.status.phase}/{.status.nodeName}/{.metadata.uid}")
		return strings.HasPrefix(got, "Running/node-2/") && !strings.HasSuffix(got, "/"+noneUID)
	}, 60*time.Second, 200*time.Millisecond, "the None VMI runs again, new, on node-2")
	assert.Equal(t, "migrations", regexp.MustCompile(`kubevirt-evacuation-\S+`).ReplaceAllString(
		jsonpath("get", "vmim", "-o", "jsonpath={.items[*].metadata.name}"), "migrations"), "one evacuation migration")

	out = k.ok(ctx, "get", "pods", "-o", "wide")
	assert.NotContains(t, out, "node-1")
	assert.Regexp(t, `(?m)^virt-launcher-vm-live-[a-z0-9]{5}\s+1/1\s+Running\s+0\s+\S+\s+\S+\s+node-2\s`, out)
	assert.Regexp(t, `(?m)^virt-launcher-vm-none-[a-z0-9]{5}\s+1/1\s+Running\s+0\s+\S+\s+\S+\s+node-2\s`, out)
	k.ok(ctx, "uncordon", "node-1")
}
