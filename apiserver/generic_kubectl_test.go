package apiserver_test

import (
	"bufio"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/store"
)

const rsManifest = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstanceReplicaSet
metadata:
  name: rs
  namespace: default
spec:
  replicas: 1
  selector:
    matchLabels: {app: rs}
  template:
    metadata:
      labels: {app: rs}
    spec:
      domain:
        devices: {}
        memory: {guest: 128Mi}
`

// Real kubectl against NewGeneric: discovery, server-side apply and its
// conflicts, explain, namespaces, tables, can-i, scale.
func TestGenericKubectl(t *testing.T) {
	requireKubectlBinary(t)
	ts := startGeneric(t, apiserver.GenericOptions{WatchCache: true})
	k := kubectlRunner{t: t, kubeconfig: ts.kubeconfig(t, "")}

	assert.Contains(t, k.ok("", "api-resources"), "virtualmachineinstances")

	t.Run("server-side apply conflicts", func(t *testing.T) {
		vm := vmManifest("default", "ssa", "Halted")
		assert.Contains(t, k.ok(vm, "apply", "--server-side", "--field-manager", "alice", "-f", "-"), "serverside-applied")
		assert.Contains(t, k.ok(vm, "apply", "--server-side", "--field-manager", "alice", "-f", "-"), "serverside-applied")
		out := k.fails(strings.Replace(vm, "runStrategy: Halted", "runStrategy: Always", 1),
			"apply", "--server-side", "--field-manager", "bob", "-f", "-")
		assert.Contains(t, out, "conflict")
		assert.Contains(t, out, ".spec.runStrategy")
		assert.Contains(t, k.ok("", "get", "vm", "ssa", "-o", "jsonpath={.spec.runStrategy}"), "Halted")
		k.ok(strings.Replace(vm, "runStrategy: Halted", "runStrategy: Always", 1),
			"apply", "--server-side", "--force-conflicts", "--field-manager", "bob", "-f", "-")
		assert.Contains(t, k.ok("", "get", "vm", "ssa", "-o", "jsonpath={.spec.runStrategy}"), "Always")
	})

	t.Run("explain", func(t *testing.T) {
		assert.Contains(t, k.ok("", "explain", "vm.spec.template"), "spec")
		out := k.ok("", "explain", "vm.spec.template.spec.domain")
		assert.Contains(t, out, "VirtualMachine")
		assert.Contains(t, out, "devices")
	})

	t.Run("namespaces", func(t *testing.T) {
		assert.Contains(t, k.ok("", "create", "namespace", "team-a"), "namespace/team-a created")
		assert.Contains(t, k.ok(vmManifest("team-a", "vm-a", "Halted"), "apply", "-f", "-"), "created")
		out := k.fails(vmManifest("nowhere", "vm-x", "Halted"), "apply", "-f", "-")
		assert.Contains(t, out, `namespaces "nowhere" not found`)
		out = k.ok("", "get", "vm,vmi,ns", "-A")
		assert.Contains(t, out, "virtualmachine.kubevirt.io/vm-a")
		assert.Contains(t, out, "namespace/team-a")
	})

	t.Run("tables", func(t *testing.T) {
		lines := strings.Split(strings.TrimSpace(k.ok("", "get", "vms", "-n", "team-a")), "\n")
		require.Len(t, lines, 2)
		assert.Equal(t, []string{"NAME", "AGE", "STATUS", "READY"}, strings.Fields(lines[0]))
		assert.Contains(t, k.fails("", "get", "vmis", "--field-selector", "spec.domain=x"), "field label not supported")
		assert.Contains(t, k.ok("", "get", "vmis", "-A", "--field-selector", "status.phase=Running"), "No resources found")
	})

	t.Run("auth can-i", func(t *testing.T) {
		alice := kubectlRunner{t: t, kubeconfig: ts.kubeconfig(t, "alice-token")}
		assert.Equal(t, "yes", strings.TrimSpace(alice.ok("", "auth", "can-i", "create", "virtualmachines", "-n", "team-a")))
		out, _ := alice.run("", "auth", "can-i", "create", "virtualmachines", "-n", "default")
		assert.Equal(t, "no", strings.TrimSpace(out))
		assert.Contains(t, alice.fails("", "get", "vms", "-n", "default"), "Forbidden")
		assert.Contains(t, alice.ok("", "auth", "whoami"), "alice")
		assert.Contains(t, kubectlRunner{t: t, kubeconfig: ts.kubeconfig(t, "wrong")}.fails("", "get", "vms"),
			"You must be logged in to the server")
	})

	t.Run("scale", func(t *testing.T) {
		k.ok(rsManifest, "apply", "-f", "-")
		assert.Contains(t, k.ok("", "scale", "vmirs", "rs", "--replicas", "3"), "scaled")
		rs := &virtkit.VirtualMachineInstanceReplicaSet{}
		require.NoError(t, ts.Store.Get(t.Context(), store.Key{Namespace: "default", Name: "rs"}, rs))
		require.NotNil(t, rs.Spec.Replicas)
		assert.Equal(t, int32(3), *rs.Spec.Replicas)
		assert.Contains(t, k.fails("", "scale", "vmirs", "rs", "--replicas", "-1"), "replicas")
	})

	t.Run("hotplug", func(t *testing.T) {
		// virtctl addvolume --persist's body, sent as kubectl sends a raw PUT.
		const path = "/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachines/ssa/addvolume"
		body := `{"name":"hp","disk":{"name":"hp","disk":{"bus":"scsi"}},"volumeSource":{"dataVolume":{"name":"hp-dv","hotpluggable":true}}}`
		k.ok(body, "replace", "--raw", path, "-f", "-")
		assert.Equal(t, "hp", k.ok("", "get", "vm", "ssa", "-o", "jsonpath={.status.volumeRequests[0].addVolumeOptions.name}"))
		assert.Contains(t, k.fails(body, "replace", "--raw", path, "-f", "-"), "add volume request for volume [hp] already exists")
		assert.Contains(t, k.fails("{}", "replace", "--raw", path, "-f", "-"), "AddVolumeOptions requires name to be set")
	})
}

// kubectl delete of a VMI a VM owns returns once the VMI is gone (the
// watch delivers DELETED), and --cascade=orphan keeps a replica set's
// VMIs.
func TestGenericKubectlDelete(t *testing.T) {
	requireKubectlBinary(t)
	ts := startGeneric(t, apiserver.GenericOptions{})
	k := kubectlRunner{t: t, kubeconfig: ts.kubeconfig(t, "")}
	ctx := t.Context()

	vm := &virtkit.VirtualMachine{}
	objs, err := virtkit.DecodeBytes([]byte(vmManifest("default", "owner", "Halted")))
	require.NoError(t, err)
	vm = objs[0].(*virtkit.VirtualMachine)
	require.NoError(t, ts.Store.Create(ctx, vm))
	vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "owner",
		Finalizers: []string{"kubevirt.io/test"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "owner", UID: vm.UID,
			Controller: ptr(true), BlockOwnerDeletion: ptr(true)}}}}
	vmi.Spec.Domain.Memory = &virtkit.Memory{}
	require.NoError(t, ts.Store.Create(ctx, vmi))

	// The "controller" removes its finalizer once the deletion starts.
	go func() {
		for ctx.Err() == nil {
			cur := &virtkit.VirtualMachineInstance{}
			if ts.Store.Get(ctx, store.Key{Namespace: "default", Name: "owner"}, cur) == nil && cur.DeletionTimestamp != nil {
				cur.Finalizers = nil
				_ = ts.Store.Update(ctx, cur)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	watch := exec.CommandContext(wctx, "kubectl", "--kubeconfig", k.kubeconfig, "get", "vmi", "-w", "--output-watch-events")
	stdout, err := watch.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, watch.Start())
	events := make(chan string, 16)
	go func() {
		for sc := bufio.NewScanner(stdout); sc.Scan(); {
			events <- sc.Text()
		}
		close(events)
	}()
	var seen []string
	// The watch has listed the VMI before it is deleted.
	for line := range events {
		seen = append(seen, line)
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "ADDED" && f[1] == "owner" {
			break
		}
	}
	assert.Contains(t, k.ok("", "delete", "vmi", "owner"), `"owner" deleted`)
	deleted := false
	for line := range events {
		seen = append(seen, line)
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "DELETED" && f[1] == "owner" {
			deleted = true
			break
		}
	}
	cancel()
	_ = watch.Wait()
	assert.True(t, deleted, "the watch delivers DELETED: %q", seen)

	// --cascade=orphan: the replica set goes, its VMI stays, without the
	// owner reference once the garbage collector has orphaned it (here:
	// the orphan finalizer marks it).
	k.ok(rsManifest, "apply", "-f", "-")
	rs := &virtkit.VirtualMachineInstanceReplicaSet{}
	require.NoError(t, ts.Store.Get(ctx, store.Key{Namespace: "default", Name: "rs"}, rs))
	child := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "rs-child",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstanceReplicaSet", Name: "rs", UID: rs.UID,
			Controller: ptr(true)}}}}
	child.Spec.Domain.Memory = &virtkit.Memory{}
	require.NoError(t, ts.Store.Create(ctx, child))
	out, err := k.run("", "delete", "vmirs", "rs", "--cascade=orphan", "--wait=false")
	require.NoError(t, err, out)
	require.NoError(t, ts.Store.Get(ctx, store.Key{Namespace: "default", Name: "rs"}, rs))
	assert.Contains(t, rs.Finalizers, metav1.FinalizerOrphanDependents, "the orphan finalizer holds the replica set for the collector")
	assert.Contains(t, k.ok("", "get", "vmi", "rs-child"), "rs-child")
}

func ptr[T any](v T) *T { return &v }
