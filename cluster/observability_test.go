package cluster_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/migration"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// tracedCluster runs a two-host simulated cluster whose hosts share a
// network (so VMIs migrate) and whose spans go to an in-memory exporter.
func tracedCluster(t *testing.T) (*cluster.Cluster, *tracetest.InMemoryExporter, context.Context) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	net := sim.NewNetwork()
	var hosts []*sim.Host
	c, err := cluster.New(cluster.Options{
		Nodes:          2,
		TracerProvider: tp,
		NewHypervisor: func(name string) (hypervisor.Hypervisor, error) {
			h := sim.New(sim.Options{Name: name})
			for _, o := range hosts {
				if err := net.Connect(h, o, sim.Link{Bandwidth: 2 << 30}); err != nil {
					return nil, err
				}
			}
			hosts = append(hosts, h)
			return h, nil
		},
		NodeAgent: node.Options{
			StatusInterval:    200 * time.Millisecond,
			HeartbeatInterval: time.Second,
			Migration: node.MigrationOptions{
				StatusInterval: 50 * time.Millisecond,
				Engine:         migration.Options{MeasurePeriod: 50 * time.Millisecond, PollInterval: 50 * time.Millisecond},
			},
		},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	tctx, tcancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(tcancel)
	return c, exp, tctx
}

func migratableVM(name string) *virtkit.VirtualMachine {
	mem := resource.MustParse("128Mi")
	always := virtkit.RunStrategyAlways
	return &virtkit.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachine},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: virtkit.VirtualMachineSpec{
			RunStrategy: &always,
			Template: &virtkit.VirtualMachineInstanceTemplateSpec{Spec: virtkit.VirtualMachineInstanceSpec{
				Domain: virtkit.DomainSpec{
					Memory: &virtkit.Memory{Guest: &mem},
					Devices: virtkit.Devices{Interfaces: []virtkit.Interface{{
						Name: "default", InterfaceBindingMethod: virtkit.InterfaceBindingMethod{Masquerade: &virtkit.InterfaceMasquerade{}},
					}}},
				},
				Networks: []virtkit.Network{{Name: "default", NetworkSource: virtkit.NetworkSource{Pod: &virtkit.PodNetwork{}}}},
			}},
		},
	}
}

// spanTree indexes ended spans.
type spanTree struct{ spans tracetest.SpanStubs }

func (s spanTree) named(name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, sp := range s.spans {
		if sp.Name == name {
			out = append(out, sp)
		}
	}
	return out
}

func (s spanTree) childrenOf(parent tracetest.SpanStub) []string {
	var out []string
	for _, sp := range s.spans {
		if sp.Parent.SpanID() == parent.SpanContext.SpanID() && sp.Parent.TraceID() == parent.SpanContext.TraceID() {
			out = append(out, sp.Name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func attr(sp tracetest.SpanStub, key string) string {
	for _, kv := range sp.Attributes {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

type eventKey struct{ reason, kind, controller string }

func recordedEvents(t *testing.T, ctx context.Context, st store.Store) map[eventKey]virtkit.Event {
	t.Helper()
	var l virtkit.EventList
	require.NoError(t, st.List(ctx, &l, store.ListOptions{Namespace: "default"}))
	out := map[eventKey]virtkit.Event{}
	for _, e := range l.Items {
		require.Empty(t, virtkit.Validate(&e), "event %s validates", e.Name)
		out[eventKey{e.Reason, e.Regarding.Kind, e.ReportingController}] = e
	}
	return out
}

// A VM start and a migration in a cluster leave a span tree and KubeVirt's
// events.
func TestClusterTracesAndEvents(t *testing.T) {
	c, exp, ctx := tracedCluster(t)
	require.NoError(t, c.Apply(ctx, migratableVM("web")))
	vmi, err := c.WaitForVMI(ctx, "default", "web", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.IsRunning() && v.IsMigratable() &&
			virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected)
	})
	require.NoError(t, err)
	source := vmi.Status.NodeName

	// The VM start: one root with the steps of every component as children.
	tree := spanTree{exp.GetSpans()}
	roots := tree.named("vm.start")
	require.Len(t, roots, 1)
	root := roots[0]
	assert.False(t, root.Parent.IsValid(), "vm.start is a root")
	assert.Equal(t, "web", attr(root, "virtkit.vm"))
	assert.Equal(t, string(vmi.UID), attr(root, "virtkit.vmi.uid"))
	assert.Equal(t, []string{"domain.boot", "domain.define", "guestagent.connect", "vmi.create", "vmi.schedule"}, tree.childrenOf(root))
	// Attempts before the nodes registered fail; the last one placed it.
	scheds := tree.named("vmi.schedule")
	sched := scheds[len(scheds)-1]
	assert.Equal(t, source, attr(sched, "virtkit.node"))
	for _, sp := range scheds[:len(scheds)-1] {
		assert.Equal(t, "Error", sp.Status.Code.String(), "a failed attempt is an error span")
	}
	assert.Equal(t, source, attr(tree.named("domain.boot")[0], "virtkit.node"))
	define, boot := tree.named("domain.define")[0], tree.named("domain.boot")[0]
	assert.False(t, boot.StartTime.Before(define.EndTime), "boot follows define")
	assert.False(t, define.StartTime.Before(sched.EndTime.Add(-time.Second)), "define follows scheduling")

	// A migration: a root, one span per phase, the engine and its decisions.
	mig, err := actions.Migrate(ctx, c.Store(), store.KeyOf(vmi), actions.MigrateOptions{})
	require.NoError(t, err)
	done, err := cluster.WaitFor(ctx, c.Store(), store.KeyOf(mig),
		func() *virtkit.VirtualMachineInstanceMigration { return &virtkit.VirtualMachineInstanceMigration{} },
		&virtkit.VirtualMachineInstanceMigrationList{},
		func(m *virtkit.VirtualMachineInstanceMigration, found bool) bool { return found && m.IsFinal() })
	require.NoError(t, err)
	require.Equal(t, virtkit.MigrationSucceeded, done.Status.Phase)

	var tree2 spanTree
	require.Eventually(t, func() bool {
		// The controller ends the last phase spans after it wrote the final
		// phase, the source its engine span after the job ended.
		tree2 = spanTree{exp.GetSpans()}
		final := false
		for _, sp := range tree2.named("migration.phase") {
			final = final || attr(sp, "virtkit.phase") == "Succeeded"
		}
		return final && len(tree2.named("migration.engine")) == 1
	}, 10*time.Second, 20*time.Millisecond)
	mroots := tree2.named("migration")
	require.Len(t, mroots, 1)
	mroot := mroots[0]
	assert.Equal(t, mig.Name, attr(mroot, "virtkit.migration"))
	var phases []string
	for _, sp := range tree2.named("migration.phase") {
		assert.Equal(t, mroot.SpanContext.SpanID(), sp.Parent.SpanID(), "phase %s is a child of the migration", attr(sp, "virtkit.phase"))
		phases = append(phases, attr(sp, "virtkit.phase"))
	}
	assert.Equal(t, []string{"Pending", "Scheduling", "Scheduled", "PreparingTarget", "TargetReady", "Running", "Succeeded"}, phases)
	engine := tree2.named("migration.engine")[0]
	assert.Equal(t, mroot.SpanContext.SpanID(), engine.Parent.SpanID(), "the source's engine joins the migration's trace")
	assert.Equal(t, "Succeeded", attr(engine, "virtkit.outcome"))
	decisions := tree2.named("migration.decision")
	require.NotEmpty(t, decisions)
	for _, d := range decisions {
		assert.Equal(t, engine.SpanContext.SpanID(), d.Parent.SpanID())
		assert.NotEmpty(t, attr(d, "virtkit.action"))
	}

	// Events, with KubeVirt's reasons, from the component that acted.
	_, err = c.WaitForVMI(ctx, "default", "web", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.Status.NodeName != source
	})
	require.NoError(t, err)
	require.NoError(t, actions.Stop(ctx, c.Store(), store.Key{Namespace: "default", Name: "web"}, actions.StopOptions{}))
	_, err = c.WaitForVMI(ctx, "default", "web", cluster.Gone[*virtkit.VirtualMachineInstance]())
	require.NoError(t, err)
	const ctrl, handler = virtkit.ReportingController, virtkit.ReportingNodeAgent
	var evs map[eventKey]virtkit.Event
	want := []eventKey{
		{"SuccessfulCreate", "VirtualMachine", ctrl},
		{"Scheduled", "VirtualMachineInstance", ctrl},
		{"Created", "VirtualMachineInstance", handler},
		{"Started", "VirtualMachineInstance", handler},
		{"SuccessfulHandOver", "VirtualMachineInstanceMigration", ctrl},
		{"Migrating", "VirtualMachineInstance", handler},
		{"PreparingTarget", "VirtualMachineInstance", handler},
		{"Migrated", "VirtualMachineInstance", handler},
		{"SuccessfulMigration", "VirtualMachineInstanceMigration", ctrl},
		{"SuccessfulDelete", "VirtualMachine", ctrl},
		{"ShuttingDown", "VirtualMachineInstance", handler}, // ACPI first; the guest powers off
		{"Stopped", "VirtualMachineInstance", handler},
	}
	missing := func() []eventKey {
		var out []eventKey
		for _, k := range want {
			if _, ok := evs[k]; !ok {
				out = append(out, k)
			}
		}
		return out
	}
	deadline := time.Now().Add(20 * time.Second)
	for evs = recordedEvents(t, ctx, c.Store()); len(missing()) > 0 && time.Now().Before(deadline); evs = recordedEvents(t, ctx, c.Store()) {
		time.Sleep(50 * time.Millisecond)
	}
	require.Empty(t, missing(), "recorded: %v", evs)
	assert.Equal(t, source, evs[eventKey{"Started", "VirtualMachineInstance", handler}].ReportingInstance)
	assert.NotEqual(t, source, evs[eventKey{"Migrated", "VirtualMachineInstance", handler}].ReportingInstance, "the target reports the arrival")
	// The guest powered off within its grace period: a voluntary stop.
	stopped := evs[eventKey{"Stopped", "VirtualMachineInstance", handler}]
	assert.Equal(t, virtkit.EventTypeNormal, stopped.Type, stopped.Note)
	assert.NotContains(t, evs, eventKey{"Deleted", "VirtualMachineInstance", handler}, "not destroyed")
	assert.Equal(t, string(vmi.UID), string(evs[eventKey{"Started", "VirtualMachineInstance", handler}].Regarding.UID))
}
