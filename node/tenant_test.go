package node_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

type noteLog struct {
	mu    sync.Mutex
	notes []string
}

func (l *noteLog) Event(_ context.Context, _ virtkit.Object, _, _, _, note string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.notes = append(l.notes, note)
}

func (l *noteLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.notes...)
}

// What the node agent writes into a VMI's status and events when its
// volume cannot be resolved carries none of the node's paths, users or
// addresses, whatever the kind of failure; the node's log keeps them.
func TestAgentStatusCarriesNoHostDetail(t *testing.T) {
	const hostDetail = "/var/lib/virtkit/pull-secrets/default/sec"
	tests := []struct {
		name     string
		err      error
		done     func(*virtkit.VirtualMachineInstance) bool
		text     func(*virtkit.VirtualMachineInstance) string
		wantText string
	}{
		{
			name: "image pull",
			err:  fmt.Errorf("%w: open %s: permission denied (user virtkit) via 10.0.0.5:5000", domain.ErrImagePull, hostDetail),
			done: func(v *virtkit.VirtualMachineInstance) bool {
				return virtkit.HasCondition(v.Status.Conditions, virtkit.VirtualMachineInstanceSynchronized, virtkit.ConditionFalse, virtkit.ErrImagePullReason)
			},
			text: func(v *virtkit.VirtualMachineInstance) string {
				return virtkit.GetCondition(v.Status.Conditions, virtkit.VirtualMachineInstanceSynchronized).Message
			},
			wantText: "image pull failed",
		},
		{
			name:     "host volume",
			err:      fmt.Errorf("stat %s: permission denied (user virtkit) via 10.0.0.5:5000", hostDetail),
			done:     func(v *virtkit.VirtualMachineInstance) bool { return v.Status.Phase == virtkit.Failed },
			text:     func(v *virtkit.VirtualMachineInstance) string { return v.Status.Reason },
			wantText: "cannot build domain",
		},
		{
			name:     "unsupported",
			err:      fmt.Errorf("volume root at %s on 10.0.0.5: %w", hostDetail, domain.ErrUnsupported),
			done:     func(v *virtkit.VirtualMachineInstance) bool { return v.Status.Phase == virtkit.Failed },
			text:     func(v *virtkit.VirtualMachineInstance) string { return v.Status.Reason },
			wantText: "volume root at <node path> on <address>",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, hv, events := store.NewMemory(), sim.New(sim.Options{Name: nodeName}), &noteLog{}
			runAgent(t, st, hv, func(o *node.Options) {
				o.Events = events
				o.Domain.VolumeResolver = domain.VolumeResolverFunc(func(context.Context, domain.VolumeRequest) (domain.HostVolume, error) {
					return domain.HostVolume{}, tt.err
				})
			})
			newMetricsVMI(t, st, "vmi", func(v *virtkit.VirtualMachineInstance) {
				v.Spec.Domain.Devices.Disks = []virtkit.Disk{{Name: "root", DiskDevice: virtkit.DiskDevice{Disk: &virtkit.DiskTarget{Bus: virtkit.DiskBusVirtio}}}}
				v.Spec.Volumes = []virtkit.Volume{{Name: "root", VolumeSource: virtkit.VolumeSource{ContainerDisk: &virtkit.ContainerDiskSource{Image: "r.example/disk:v1"}}}}
			})
			var vmi *virtkit.VirtualMachineInstance
			require.Eventually(t, func() bool {
				v, ok := getVMI(t, st, "vmi")
				vmi = v
				return ok && tt.done(v)
			}, 10*time.Second, 10*time.Millisecond)
			texts := append([]string{tt.text(vmi)}, events.all()...)
			assert.Contains(t, texts[0], tt.wantText)
			for _, s := range texts {
				for _, d := range []string{"/var/lib/virtkit", "virtkit)", "10.0.0.5"} {
					assert.NotContains(t, s, d)
				}
			}
		})
	}
}

// failingMigrationHost is a sim host whose migrations fail to start with
// an error naming the node's paths, user and addresses, as libvirt's do.
type failingMigrationHost struct {
	*simHost
}

func (h *failingMigrationHost) StartMigration(context.Context, string, hypervisor.MigrationParams) (hypervisor.MigrationJob, error) {
	return nil, fmt.Errorf("%w: unable to connect to qemu+tcp://10.0.0.7:16509/system: "+
		"open /var/lib/virtkit/run/mig.sock as user virtkit-qemu via [fd00::7]:49152: refused", hypervisor.ErrMigrationFailed)
}

// A migration's tenant-visible traces (the target's PreparingTarget
// event, the failure's event, status.migrationState.failureReason of the
// VMI and of the migration) carry neither the target's migration address
// nor the hypervisor's host detail; the node's log keeps them.
func TestMigrationStatusAndEventsCarryNoHostDetail(t *testing.T) {
	names := []string{"node-1", "node-2"}
	c := startMigClusterHosts(t, names, func(name string) sim.Options { return sim.Options{Name: name} },
		sim.Link{Bandwidth: 2 << 30}, controller.MigrationOptions{},
		func(h *sim.Host) hypervisor.Hypervisor { return &failingMigrationHost{simHost: h} },
		func(name string, o *node.Options) {
			o.Migration.URI = map[string]string{"node-1": "qemu+tcp://10.0.0.6:16509/system", "node-2": "qemu+tcp://[fd00::7]:16509/system"}[name]
		})
	vmi := c.runningVMI(t, migratableVMI("mover", "64Mi"))
	mig, err := actions.Migrate(c.ctx, c.Store(), store.KeyOf(vmi), actions.MigrateOptions{})
	require.NoError(t, err)
	done := c.waitMigration(t, mig, "final", isFinal)
	require.Equal(t, virtkit.MigrationFailed, done.Status.Phase)

	after, err := c.WaitForVMI(c.ctx, "default", "mover", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.Status.MigrationState != nil && v.Status.MigrationState.Failed
	})
	require.NoError(t, err)
	texts := []string{after.Status.MigrationState.FailureReason}
	if done.Status.MigrationState != nil {
		texts = append(texts, done.Status.MigrationState.FailureReason)
	}
	assert.Contains(t, texts[0], "the hypervisor failed the migration (the node's log has the details)")
	reasons := map[string]bool{}
	require.Eventually(t, func() bool {
		var l virtkit.EventList
		require.NoError(t, c.Store().List(c.ctx, &l, store.ListOptions{Namespace: "default"}))
		texts = texts[:1]
		for _, e := range l.Items {
			if e.Regarding.Name == "mover" {
				reasons[e.Reason] = true
				texts = append(texts, e.Note)
			}
		}
		return reasons[virtkit.EventReasonPreparingTarget] && reasons[virtkit.EventReasonMigrated]
	}, 30*time.Second, 20*time.Millisecond, "PreparingTarget and the failure's Migrated events")
	for _, s := range texts {
		for _, d := range []string{"10.0.0.", "fd00::7", "/var/lib/virtkit", "virtkit-qemu", "mig.sock"} {
			assert.NotContains(t, s, d)
		}
	}
}

// consoleFailsHost is a sim host whose console and VNC cannot be opened,
// with an error naming the node's socket, as a libvirt stream's would.
type consoleFailsHost struct {
	*simHost
}

func (consoleFailsHost) OpenConsole(context.Context, string) (io.ReadWriteCloser, error) {
	return nil, errors.New("open console: dial unix /var/run/virtkit/ns_vm/virt-serial0: connect: no such file or directory (from 10.0.0.5)")
}

func (h consoleFailsHost) OpenVNC(ctx context.Context, name string) (io.ReadWriteCloser, error) {
	return h.OpenConsole(ctx, name)
}

// What the endpoint answers when the hypervisor cannot open a VMI's
// console or display (relayed to the VMI's user by the API server) names
// neither the node's sockets nor its addresses.
func TestEndpointErrorsCarryNoHostDetail(t *testing.T) {
	ctx := t.Context()
	st := store.NewMemory()
	h := sim.New(sim.Options{Name: "ep-node"})
	agent, err := node.New(node.Options{NodeName: "ep-node", Store: st, Hypervisor: consoleFailsHost{h}})
	require.NoError(t, err)
	vmi := &virtkit.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm"},
	}
	require.NoError(t, st.Create(ctx, vmi))
	vmi.Status.NodeName, vmi.Status.Phase = "ep-node", virtkit.Running
	require.NoError(t, st.UpdateStatus(ctx, vmi))

	ca := newTestCA(t)
	certPEM, keyPEM := ca.issue(t, "ep-node", true)
	cfg, err := node.EndpointTLSConfig(ca.pem, certPEM, keyPEM)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(agent.Endpoint(node.EndpointOptions{}))
	srv.TLS = cfg
	srv.StartTLS()
	defer srv.Close()
	wsURL := strings.Replace(srv.URL, "https://", "wss://", 1) + "/v1/namespaces/ns/virtualmachineinstances/vm/"
	d := websocket.Dialer{TLSClientConfig: ca.clientTLS(t, node.EndpointClientUser), Subprotocols: []string{node.StreamSubprotocol}}
	for _, sub := range []string{"console", "vnc"} {
		_, resp, err := d.DialContext(ctx, wsURL+sub, nil)
		require.Error(t, err, sub)
		require.NotNil(t, resp, sub)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusBadGateway, resp.StatusCode, sub)
		assert.Contains(t, string(body), "open console: dial unix <node path>: connect: no such file", sub)
		assert.NotContains(t, string(body), "/var/run/virtkit", sub)
		assert.NotContains(t, string(body), "10.0.0.5", sub)
	}
}
