package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const cascadeManifests = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: web, namespace: default}
spec:
  runStrategy: Always
  template:
    spec:
      domain:
        devices: {}
        memory: {guest: 64Mi}
---
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstanceReplicaSet
metadata: {name: pool, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: pool}}
  template:
    metadata: {labels: {app: pool}}
    spec:
      domain:
        devices: {}
        memory: {guest: 64Mi}
`

// kubectl delete vm --cascade=orphan and virtkit delete vmirs
// --cascade=orphan (through the API of `virtkit controller`) delete the
// owner and leave its VMIs running, without owner references.
func TestDeleteCascadeOrphanKubectl(t *testing.T) {
	requireKubectl(t)
	kc := startAPIController(t, "--nodes", "1", "--heartbeat-interval", "200ms")
	ctx := t.Context()
	k := kubectl{t: t, kubeconfig: kc}
	manifest := filepath.Join(t.TempDir(), "m.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(cascadeManifests), 0o644))
	k.ok(ctx, "apply", "-f", manifest)
	// running maps each running VMI to the kinds of its owners.
	running := func() map[string]string {
		out, err := k.run(ctx, "get", "vmi", "-o", `jsonpath={range .items[?(@.status.phase=="Running")]}{.metadata.name}={.metadata.ownerReferences[*].kind}{"|"}{end}`)
		if err != nil {
			return nil
		}
		m := map[string]string{}
		for _, e := range strings.Split(out, "|") {
			if name, owners, ok := strings.Cut(e, "="); ok {
				m[name] = owners
			}
		}
		return m
	}
	owners := func() []string {
		var out []string
		for _, o := range running() {
			out = append(out, o)
		}
		slices.Sort(out)
		return out
	}
	require.Eventually(t, func() bool {
		return slices.Equal(owners(), []string{"VirtualMachine", "VirtualMachineInstanceReplicaSet", "VirtualMachineInstanceReplicaSet"})
	},
		60*time.Second, 100*time.Millisecond, "3 running VMIs with owners: %v", running())
	before := running()

	assert.Contains(t, k.ok(ctx, "delete", "vm", "web", "--cascade=orphan"), `"web" deleted`)
	_, err := k.run(ctx, "get", "vm", "web")
	require.Error(t, err, "kubectl waited for the VM to go")

	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"delete", "vmirs", "pool", "--cascade=orphan", "--kubeconfig", kc})
	require.NoError(t, cmd.ExecuteContext(ctx), out.String())
	require.Eventually(t, func() bool {
		_, err := k.run(ctx, "get", "vmirs", "pool")
		return err != nil
	}, 30*time.Second, 100*time.Millisecond, "the ReplicaSet goes")

	// The same three VMIs keep running, none with an owner reference.
	after := running()
	assert.Len(t, after, 3)
	for name := range before {
		owner, ok := after[name]
		assert.True(t, ok, "%s still running", name)
		assert.Empty(t, owner, "%s has no owner", name)
	}
}
