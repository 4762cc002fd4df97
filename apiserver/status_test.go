package apiserver_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/store"
)

var (
	nodeGVR = schema.GroupVersionResource{Group: virtkit.VirtkitGroupName, Version: "v1alpha1", Resource: "nodes"}
)

// placedVMI stores a VMI in ns with the given node and migration state.
func placedVMI(t *testing.T, st store.Store, ns, name, node string, ms *virtkit.VirtualMachineInstanceMigrationState) {
	t.Helper()
	vmi := &virtkit.VirtualMachineInstance{}
	vmi.Name, vmi.Namespace = name, ns
	vmi.Labels = map[string]string{"app": "demo"}
	if node != "" {
		vmi.Labels[virtkit.NodeNameLabel] = node
	}
	require.NoError(t, st.Create(t.Context(), vmi))
	vmi.Status.NodeName = node
	vmi.Status.Phase = virtkit.Pending
	if node != "" {
		vmi.Status.Phase = virtkit.Running
	}
	vmi.Status.MigrationState = ms
	require.NoError(t, st.UpdateStatus(t.Context(), vmi))
}

func storedVMI(t *testing.T, st store.Store, ns, name string) *virtkit.VirtualMachineInstance {
	t.Helper()
	vmi := &virtkit.VirtualMachineInstance{}
	require.NoError(t, st.Get(t.Context(), store.Key{Namespace: ns, Name: name}, vmi))
	return vmi
}

func patchStatus(ctx context.Context, dc dynamic.Interface, gvr schema.GroupVersionResource, ns, name, patch string) error {
	ri := dc.Resource(gvr)
	var r dynamic.ResourceInterface = ri
	if ns != "" {
		r = ri.Namespace(ns)
	}
	_, err := r.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	return err
}

// causeAt returns the field paths and types of an Invalid error's causes.
func causes(err error) map[string]metav1.CauseType {
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Details == nil {
		return nil
	}
	out := map[string]metav1.CauseType{}
	for _, c := range st.Status().Details.Causes {
		out[c.Field] = c.Type
	}
	return out
}

// A tenant who may do everything in her namespace may not write the status
// of any kind there, by update or by patch: the status is the control
// plane's. She still reads it, and nothing changes in the store.
func TestStatusWriteDeniedToTenant(t *testing.T) {
	st := newStore(t)
	ts := startServer(t, st, apiserver.GenericOptions{})
	ctx := t.Context()
	placedVMI(t, st, "team-a", "vm-0", "node-1", nil)
	admin, err := dynamic.NewForConfig(ts.admin())
	require.NoError(t, err)
	alice, err := dynamic.NewForConfig(ts.token("alice-token"))
	require.NoError(t, err)
	_, err = alice.Resource(vmGVR).Namespace("team-a").Create(ctx, vmObject(t, "vm-0", "Halted"), metav1.CreateOptions{})
	require.NoError(t, err, "alice creates in her namespace")
	for _, obj := range []struct{ apiVersion, kind, plural, spec string }{
		{"kubevirt.io/v1", "VirtualMachineInstanceMigration", "virtualmachineinstancemigrations", `{"vmiName":"vm-0"}`},
		{"kubevirt.io/v1", "VirtualMachineInstanceReplicaSet", "virtualmachineinstancereplicasets",
			`{"selector":{"matchLabels":{"app":"rs"}},"template":{"metadata":{"labels":{"app":"rs"}},"spec":{"domain":{"devices":{}}}}}`},
	} {
		_, err := admin.Resource(vmGVR.GroupVersion().WithResource(obj.plural)).Namespace("team-a").Create(ctx,
			mustUnstructured(t, `{"apiVersion":"`+obj.apiVersion+`","kind":"`+obj.kind+`","metadata":{"name":"vm-0"},"spec":`+obj.spec+`}`),
			metav1.CreateOptions{})
		require.NoError(t, err, obj.kind)
	}
	before := snapshot(t, st)

	tests := []struct {
		name, resource, patch string
	}{
		{"VMI moved to another node", "virtualmachineinstances", `{"status":{"nodeName":"node-2"}}`},
		{"VMI phase", "virtualmachineinstances", `{"status":{"phase":"Failed"}}`},
		{"VM printable status", "virtualmachines", `{"status":{"printableStatus":"Running"}}`},
		{"migration phase", "virtualmachineinstancemigrations", `{"status":{"phase":"Succeeded"}}`},
		{"replica set replicas", "virtualmachineinstancereplicasets", `{"status":{"replicas":3}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := alice.Resource(vmGVR.GroupVersion().WithResource(tt.resource)).Namespace("team-a")
			cur, err := r.Get(ctx, "vm-0", metav1.GetOptions{}, "status")
			require.NoError(t, err, "alice reads the status")

			err = patchStatus(ctx, alice, vmGVR.GroupVersion().WithResource(tt.resource), "team-a", "vm-0", tt.patch)
			require.True(t, apierrors.IsForbidden(err), "patch: Forbidden, got %v", err)
			assert.Contains(t, err.Error(), `User "alice" cannot patch resource "`+tt.resource+`/status"`)

			_, err = r.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			require.True(t, apierrors.IsForbidden(err), "update: Forbidden, got %v", err)
			assert.Contains(t, err.Error(), `User "alice" cannot update resource "`+tt.resource+`/status"`)
		})
	}
	assert.Equal(t, before, snapshot(t, st), "nothing changed in the store")
	assert.Equal(t, "node-1", storedVMI(t, st, "team-a", "vm-0").Status.NodeName)
}

// A rule that names the status resource grants its writes to a tenant, but
// a VMI's placement stays the control plane's: status.nodeName and the
// migration's routing are Forbidden with their field paths.
func TestStatusWriteGrantedKeepsPlacement(t *testing.T) {
	st := newStore(t)
	ts := startServer(t, st, apiserver.GenericOptions{Authorizer: legacyAuthorizer(t, `rules:
- user: alice
  namespaces: [team-a]
  resources: [virtualmachineinstances, virtualmachineinstances/status]
`)})
	ctx := t.Context()
	placedVMI(t, st, "team-a", "pending", "", nil)
	placedVMI(t, st, "team-a", "running", "node-1", nil)
	alice, err := dynamic.NewForConfig(ts.token("alice-token"))
	require.NoError(t, err)

	require.NoError(t, patchStatus(ctx, alice, vmiGVR, "team-a", "running", `{"status":{"reason":"noted"}}`),
		"a granted status write that leaves the placement alone")
	tests := []struct {
		name, vmi, patch, field string
	}{
		{"schedule a pending VMI", "pending", `{"status":{"nodeName":"node-9"}}`, "status.nodeName"},
		{"move a running VMI", "running", `{"status":{"nodeName":"node-2"}}`, "status.nodeName"},
		{"unplace a running VMI", "running", `{"status":{"nodeName":null}}`, "status.nodeName"},
		{"route a migration", "running", `{"status":{"migrationState":{"migrationUid":"u","targetNode":"node-2"}}}`, "status.migrationState.targetNode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := storedVMI(t, st, "team-a", tt.vmi)
			err := patchStatus(ctx, alice, vmiGVR, "team-a", tt.vmi, tt.patch)
			require.True(t, apierrors.IsInvalid(err), "Invalid, got %v", err)
			assert.Equal(t, metav1.CauseTypeForbidden, causes(err)[tt.field], "causes: %v", causes(err))
			assert.Equal(t, before.ResourceVersion, storedVMI(t, st, "team-a", tt.vmi).ResourceVersion, "not written")
		})
	}
}

// A node agent writes the status of the VMIs on its node and of its own
// Node only; it never places or moves a VMI except in the handover of a
// migration that ended on it.
func TestNodeStatusWrites(t *testing.T) {
	st := newStore(t)
	ts := startServer(t, st, apiserver.GenericOptions{})
	ctx := t.Context()
	end := metav1.NewTime(time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC))
	migrating := func(ended bool) *virtkit.VirtualMachineInstanceMigrationState {
		ms := &virtkit.VirtualMachineInstanceMigrationState{MigrationUID: "mig-1", SourceNode: "node-1", TargetNode: "node-2", StartTimestamp: &end}
		if ended {
			ms.EndTimestamp = &end
		}
		return ms
	}
	admin, err := dynamic.NewForConfig(ts.admin())
	require.NoError(t, err)
	for _, n := range []string{"node-1", "node-2"} {
		_, err := admin.Resource(nodeGVR).Create(ctx, mustUnstructured(t,
			`{"apiVersion":"virtkit.io/v1alpha1","kind":"Node","metadata":{"name":"`+n+`"}}`), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	nodeClient := func(name string) dynamic.Interface {
		dc, err := dynamic.NewForConfig(ts.cert(t, apiserver.NodeUser(name), apiserver.NodesGroup))
		require.NoError(t, err)
		return dc
	}
	tests := []struct {
		name       string
		node       string
		vmiNode    string
		ms         *virtkit.VirtualMachineInstanceMigrationState
		gvr        schema.GroupVersionResource
		target     string // the object's name when not a fresh VMI
		patch      string
		wantCode   int
		wantField  string
		wantInText string
	}{
		{name: "own VMI", node: "node-1", vmiNode: "node-1", patch: `{"status":{"reason":"x"}}`},
		{name: "incoming migration", node: "node-2", vmiNode: "node-1", ms: migrating(false),
			patch: `{"status":{"migrationState":{"targetNodeDomainDetected":true}}}`},
		{name: "handover to itself after the migration ended", node: "node-2", vmiNode: "node-1", ms: migrating(true),
			patch: `{"status":{"nodeName":"node-2","migrationState":{"completed":true}}}`},
		{name: "another node's VMI", node: "node-1", vmiNode: "node-2", patch: `{"status":{"reason":"x"}}`,
			wantCode: 403, wantInText: `node "node-1" may write the status of the VMIs placed on it`},
		{name: "an unplaced VMI onto itself", node: "node-1", patch: `{"status":{"nodeName":"node-1"}}`,
			wantCode: 403, wantInText: "this one is not placed"},
		{name: "move its VMI to another node", node: "node-1", vmiNode: "node-1", patch: `{"status":{"nodeName":"node-2"}}`,
			wantCode: 422, wantField: "status.nodeName"},
		{name: "the source hands over", node: "node-1", vmiNode: "node-1", ms: migrating(true),
			patch: `{"status":{"nodeName":"node-2"}}`, wantCode: 422, wantField: "status.nodeName"},
		{name: "handover before the migration ended", node: "node-2", vmiNode: "node-1", ms: migrating(false),
			patch: `{"status":{"nodeName":"node-2"}}`, wantCode: 422, wantField: "status.nodeName"},
		{name: "redirect a migration", node: "node-1", vmiNode: "node-1", ms: migrating(false),
			patch: `{"status":{"migrationState":{"targetNode":"node-3"}}}`, wantCode: 422, wantField: "status.migrationState.targetNode"},
		{name: "own Node", node: "node-1", gvr: nodeGVR, target: "node-1", patch: `{"status":{"hypervisor":"sim"}}`},
		{name: "another Node", node: "node-1", gvr: nodeGVR, target: "node-2", patch: `{"status":{"hypervisor":"sim"}}`,
			wantCode: 403},
		{name: "a VM", node: "node-1", gvr: vmGVR, target: "vm-0", patch: `{"status":{"printableStatus":"Running"}}`,
			wantCode: 403, wantInText: `cannot patch resource "virtualmachines/status"`},
	}
	_, err = admin.Resource(vmGVR).Namespace("default").Create(ctx, vmObject(t, "vm-0", "Halted"), metav1.CreateOptions{})
	require.NoError(t, err)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gvr, name, ns := tt.gvr, tt.target, "default"
			if name == "" {
				gvr, name = vmiGVR, "vmi-"+string(rune('a'+i))
				placedVMI(t, st, ns, name, tt.vmiNode, tt.ms)
			}
			if gvr == nodeGVR {
				ns = ""
			}
			err := patchStatus(ctx, nodeClient(tt.node), gvr, ns, name, tt.patch)
			switch tt.wantCode {
			case 0:
				require.NoError(t, err)
			case 403:
				require.True(t, apierrors.IsForbidden(err), "Forbidden, got %v", err)
				assert.Contains(t, err.Error(), tt.wantInText)
			case 422:
				require.True(t, apierrors.IsInvalid(err), "Invalid, got %v", err)
				assert.Equal(t, metav1.CauseTypeForbidden, causes(err)[tt.wantField], "causes: %v", causes(err))
			}
			if gvr == vmiGVR {
				got := storedVMI(t, st, ns, name)
				if tt.wantCode == 0 && tt.ms != nil && tt.ms.EndTimestamp != nil {
					assert.Equal(t, "node-2", got.Status.NodeName, "handed over")
				} else {
					assert.Equal(t, tt.vmiNode, got.Status.NodeName, "the placement is unchanged")
				}
			}
		})
	}
}

// The control plane's identity schedules VMIs and hands migrations over;
// it too moves a placed VMI only in a handover. An admin writes status but
// does not place VMIs.
func TestControlPlaneStatusWrites(t *testing.T) {
	st := newStore(t)
	ts := startServer(t, st, apiserver.GenericOptions{})
	ctx := t.Context()
	cp, err := dynamic.NewForConfig(ts.cert(t, "virtkit-controller", apiserver.ControlPlaneGroup))
	require.NoError(t, err)
	admin, err := dynamic.NewForConfig(ts.admin())
	require.NoError(t, err)
	end := metav1.NewTime(time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC))
	placedVMI(t, st, "team-b", "pending", "", nil)
	placedVMI(t, st, "team-b", "running", "node-1", nil)
	placedVMI(t, st, "team-b", "migrated", "node-1",
		&virtkit.VirtualMachineInstanceMigrationState{MigrationUID: "mig-1", SourceNode: "node-1", TargetNode: "node-2", EndTimestamp: &end})
	placedVMI(t, st, "team-b", "admin", "", nil)
	_, err = admin.Resource(vmGVR).Namespace("team-b").Create(ctx, vmObject(t, "vm-0", "Halted"), metav1.CreateOptions{})
	require.NoError(t, err)

	require.NoError(t, patchStatus(ctx, cp, vmiGVR, "team-b", "pending", `{"status":{"nodeName":"node-1","phase":"Scheduled"}}`),
		"the scheduler places a VMI")
	assert.Equal(t, "node-1", storedVMI(t, st, "team-b", "pending").Status.NodeName)
	require.NoError(t, patchStatus(ctx, cp, vmiGVR, "team-b", "migrated", `{"status":{"nodeName":"node-2"}}`),
		"the migration handover")
	assert.Equal(t, "node-2", storedVMI(t, st, "team-b", "migrated").Status.NodeName)
	require.NoError(t, patchStatus(ctx, cp, vmGVR, "team-b", "vm-0", `{"status":{"printableStatus":"Stopped"}}`),
		"the controller writes a VM's status")

	err = patchStatus(ctx, cp, vmiGVR, "team-b", "running", `{"status":{"nodeName":"node-2"}}`)
	require.True(t, apierrors.IsInvalid(err), "moving a running VMI without a migration: Invalid, got %v", err)
	assert.Equal(t, metav1.CauseTypeForbidden, causes(err)["status.nodeName"])
	assert.Equal(t, "node-1", storedVMI(t, st, "team-b", "running").Status.NodeName)

	err = patchStatus(ctx, admin, vmiGVR, "team-b", "admin", `{"status":{"nodeName":"node-1"}}`)
	require.True(t, apierrors.IsInvalid(err), "an admin does not place VMIs: Invalid, got %v", err)
	assert.Equal(t, metav1.CauseTypeForbidden, causes(err)["status.nodeName"])
	require.NoError(t, patchStatus(ctx, admin, vmiGVR, "team-b", "admin", `{"status":{"reason":"checked"}}`))
}

// A status write changes the status only: the spec, labels (the placement
// label kubevirt.io/nodeName among them) and annotations in its body are
// ignored, as Kubernetes' status strategy ignores them.
func TestStatusWriteKeepsSpecAndMetadata(t *testing.T) {
	st := newStore(t)
	ts := startServer(t, st, apiserver.GenericOptions{})
	ctx := t.Context()
	placedVMI(t, st, "default", "vm-0", "node-1", nil)
	cp, err := dynamic.NewForConfig(ts.cert(t, "virtkit-controller", apiserver.ControlPlaneGroup))
	require.NoError(t, err)
	r := cp.Resource(vmiGVR).Namespace("default")
	before := storedVMI(t, st, "default", "vm-0")
	require.NoError(t, patchStatus(ctx, cp, vmiGVR, "default", "vm-0",
		`{"metadata":{"labels":{"kubevirt.io/nodeName":"node-2","app":"x"},"annotations":{"a":"b"}},`+
			`"spec":{"hostname":"changed"},"status":{"reason":"patched"}}`))
	cur, err := r.Get(ctx, "vm-0", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(cur.Object, "updated", "status", "reason"))
	require.NoError(t, unstructured.SetNestedField(cur.Object, "changed", "spec", "subdomain"))
	cur.SetLabels(map[string]string{virtkit.NodeNameLabel: "node-2"})
	_, err = r.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
	require.NoError(t, err)

	after := storedVMI(t, st, "default", "vm-0")
	assert.Equal(t, "updated", after.Status.Reason)
	assert.Equal(t, before.Spec, after.Spec)
	assert.Equal(t, before.Labels, after.Labels)
	assert.Equal(t, before.Annotations, after.Annotations)
}

// A whole VM start through the API, by a tenant in her namespace, on a
// simulated cluster on virtual time: the controllers and node agents write
// status through the store, so refusing users' status writes does not
// stop them.
func TestVMStartThroughAPI(t *testing.T) {
	clk := sim.NewVirtualClock(time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC))
	c, err := cluster.New(cluster.Options{Clock: clk, Store: newStore(t)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.NoError(t, c.Settle(ctx))
	ts := startServer(t, c.Store(), apiserver.GenericOptions{})
	alice, err := dynamic.NewForConfig(ts.token("alice-token"))
	require.NoError(t, err)

	_, err = alice.Resource(vmGVR).Namespace("team-a").Create(ctx, vmObject(t, "vm-0", "Always"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, c.Settle(ctx))

	vmi, err := alice.Resource(vmiGVR).Namespace("team-a").Get(ctx, "vm-0", metav1.GetOptions{})
	require.NoError(t, err)
	phase, _, _ := unstructured.NestedString(vmi.Object, "status", "phase")
	node, _, _ := unstructured.NestedString(vmi.Object, "status", "nodeName")
	assert.Equal(t, string(virtkit.Running), phase)
	assert.NotEmpty(t, node)
	vm, err := alice.Resource(vmGVR).Namespace("team-a").Get(ctx, "vm-0", metav1.GetOptions{})
	require.NoError(t, err)
	ps, _, _ := unstructured.NestedString(vm.Object, "status", "printableStatus")
	assert.Equal(t, "Running", ps)

	err = patchStatus(ctx, alice, vmiGVR, "team-a", "vm-0", `{"status":{"nodeName":"elsewhere"}}`)
	assert.True(t, apierrors.IsForbidden(err), "Forbidden, got %v", err)
	require.NoError(t, c.Settle(ctx))
	assert.Equal(t, node, storedVMI(t, c.Store(), "team-a", "vm-0").Status.NodeName)
}

func mustUnstructured(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON([]byte(doc)))
	return u
}
