package printers_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/printers"
)

var t0 = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

func names(cols []printers.Column, priority int32) []string {
	var out []string
	for _, c := range cols {
		if c.Definition.Priority <= priority {
			out = append(out, c.Definition.Name)
		}
	}
	return out
}

// KubeVirt's and CDI's additionalPrinterColumns, kube-apiserver's for events.
func TestColumns(t *testing.T) {
	for kind, want := range map[string][]string{
		virtkit.KindVirtualMachine:                   {"Name", "Age", "Status", "Ready"},
		virtkit.KindVirtualMachineInstance:           {"Name", "Age", "Phase", "IP", "NodeName", "Ready"},
		virtkit.KindVirtualMachineInstanceMigration:  {"Name", "Phase", "VMI"},
		virtkit.KindVirtualMachineInstanceReplicaSet: {"Name", "Desired", "Current", "Ready", "Age"},
		virtkit.KindDataVolume:                       {"Name", "Phase", "Progress", "Restarts", "Age"},
		virtkit.KindNode:                             {"Name", "Status", "Age"},
		virtkit.KindEvent:                            {"Last Seen", "Type", "Reason", "Object", "Message"},
		virtkit.KindMigrationPolicy:                  {"Name", "Age"},
	} {
		assert.Equal(t, want, names(printers.Columns(kind), 0), kind)
	}
	assert.Equal(t, []string{"Name", "Age", "Phase", "IP", "NodeName", "Ready", "Live-Migratable", "Paused"},
		names(printers.Columns(virtkit.KindVirtualMachineInstance), 1))
}

func TestNodeStatus(t *testing.T) {
	n := &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(t0)},
		Spec: virtkit.NodeSpec{Unschedulable: true},
		Status: virtkit.NodeStatus{Hypervisor: "sim", Conditions: []virtkit.Condition{{Type: virtkit.NodeReady, Status: virtkit.ConditionTrue}},
			Capacity: virtkit.ResourceList{virtkit.ResourceCPU: resource.MustParse("8"), virtkit.ResourceMemory: resource.MustParse("32Gi")}}}
	tab := printers.NewTable(printers.Columns(virtkit.KindNode), []virtkit.Object{n}, printers.TableOptions{Now: t0.Add(3 * time.Hour)})
	require.Len(t, tab.Rows, 1)
	assert.Equal(t, []any{"n1", "Ready,SchedulingDisabled", "3h", "sim", "8", "32Gi"}, tab.Rows[0].Cells)
	pom, ok := tab.Rows[0].Object.Object.(*metav1.PartialObjectMetadata)
	require.True(t, ok)
	assert.Equal(t, "n1", pom.Name)
}

func TestEventLastSeen(t *testing.T) {
	e := &virtkit.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "default"},
		EventTime: metav1.NewMicroTime(t0), Type: "Warning", Reason: "SyncFailed", Note: "disk missing",
		Regarding: virtkit.ObjectReference{Kind: "VirtualMachineInstance", Name: "vmi1"},
		Series:    &virtkit.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(t0.Add(5 * time.Minute))}}
	tab := printers.NewTable(printers.Columns(virtkit.KindEvent), []virtkit.Object{e}, printers.TableOptions{Now: t0.Add(10 * time.Minute)})
	assert.Equal(t, []any{"5m (x3 over 10m)", "Warning", "SyncFailed", "virtualmachineinstance/vmi1", "", "", "disk missing", "10m", "3", "e1"},
		tab.Rows[0].Cells)
}

func TestPrinter(t *testing.T) {
	vmi := func(ns, name string) *virtkit.VirtualMachineInstance {
		return &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(t0)},
			Status: virtkit.VirtualMachineInstanceStatus{Phase: virtkit.Running, NodeName: "node-1"}}
	}
	objs := []virtkit.Object{vmi("default", "a"), vmi("other", "b\x1b")}
	cols := printers.Columns(virtkit.KindVirtualMachineInstance)
	for _, tc := range []struct {
		name string
		p    printers.Printer
		want string
	}{
		{"narrow", printers.Printer{}, "NAME   AGE   PHASE     IP       NODENAME   READY\na      90s   Running   <none>   node-1     <none>\n"},
		{"all namespaces", printers.Printer{WithNamespace: true, Escape: func(s string) string { return strings.ReplaceAll(s, "\x1b", `\x1b`) }},
			"NAMESPACE   NAME    AGE   PHASE     IP       NODENAME   READY\ndefault     a       90s   Running   <none>   node-1     <none>\nother       b\\x1b   90s   Running   <none>   node-1     <none>\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			tc.p.W = &b
			in := objs
			if !tc.p.WithNamespace {
				in = objs[:1]
			}
			require.NoError(t, tc.p.Print(printers.NewTable(cols, in, printers.TableOptions{Now: t0.Add(90 * time.Second), Include: printers.IncludeObject})))
			assert.Equal(t, tc.want, b.String())
		})
	}
}

// A watch's Tables carry no column definitions: the first one's are kept
// and the header is printed once (each Print aligns its own rows, as
// kubectl's watch output does).
func TestPrinterKeepsColumns(t *testing.T) {
	var b bytes.Buffer
	p := printers.Printer{W: &b}
	cols := printers.Columns(virtkit.KindMigrationPolicy)
	mp := &virtkit.MigrationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: metav1.NewTime(t0)}}
	require.NoError(t, p.Print(printers.NewTable(cols, nil, printers.TableOptions{})))
	require.NoError(t, p.Print(printers.NewTable(cols, []virtkit.Object{mp}, printers.TableOptions{Now: t0.Add(time.Hour), NoHeaders: true})))
	assert.Equal(t, "NAME   AGE\np   60m\n", b.String())
}
