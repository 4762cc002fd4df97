package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd"
	"github.com/virtkit/virtkit/store/etcd/etcdtest"
)

// The observation contract of `virtkit node --hypervisor sim`: GET
// /debug/domains on --metrics-addr lists what the simulated host runs,
// foreign guests included and left alone.
func TestNodeDebugDomains(t *testing.T) {
	endpoints := etcdtest.StartServer(t)
	st, err := etcd.New(t.Context(), etcd.Options{Endpoints: endpoints})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })

	// Someone else's guest on the host, running before the agent starts.
	statePath := filepath.Join(t.TempDir(), "n1.json")
	pctx, pcancel := context.WithCancel(t.Context())
	p, err := sim.OpenPersistent(pctx, sim.New(sim.Options{Name: "n1"}), statePath)
	require.NoError(t, err)
	_, err = p.Define(pctx, `<domain type='kvm'><name>legacy_db</name><memory unit='MiB'>64</memory><vcpu>1</vcpu><os><type arch='x86_64'>hvm</type></os></domain>`)
	require.NoError(t, err)
	require.NoError(t, p.Start(pctx, "legacy_db", hypervisor.StartOptions{}))
	pcancel()

	cmd := newRootCmd()
	var out lockedBuffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"node", "--name", "n1", "--store", "etcd://" + strings.TrimPrefix(endpoints[0], "http://"),
		"--hypervisor", "sim", "--sim-state", statePath, "--heartbeat-interval", "100ms", "--status-interval", "200ms",
		"--metrics-addr", "127.0.0.1:0", "--log-level", "debug"})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("node did not stop")
		}
	})
	urlRE := regexp.MustCompile(`metrics: (http://\S+)/metrics`)
	var base string
	require.Eventually(t, func() bool {
		m := urlRE.FindStringSubmatch(out.String())
		if m != nil {
			base = m[1]
		}
		return m != nil && strings.Contains(out.String(), "node agent starting")
	}, 20*time.Second, 20*time.Millisecond, "%s", &out)
	require.Eventually(t, func() bool {
		return st.Get(t.Context(), store.Key{Name: "n1"}, &virtkit.Node{}) == nil
	}, 20*time.Second, 20*time.Millisecond)

	// A VMI placed on n1.
	mem := resource.MustParse("64Mi")
	vmi := &virtkit.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
		ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "default", Labels: map[string]string{virtkit.NodeNameLabel: "n1"}},
		Spec:       virtkit.VirtualMachineInstanceSpec{Domain: virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: &mem}}},
	}
	virtkit.SetDefaults(vmi)
	require.NoError(t, st.Create(t.Context(), vmi))
	vmi.Status.NodeName = "n1"
	vmi.SetPhase(virtkit.Scheduled, metav1.Now())
	require.NoError(t, st.UpdateStatus(t.Context(), vmi))

	get := func(path string) string {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+path, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		return string(body)
	}
	var rep hostDomainsReply
	require.Eventually(t, func() bool {
		rep = hostDomainsReply{}
		require.NoError(t, json.Unmarshal([]byte(get(hostDomainsPath)), &rep))
		for _, d := range rep.Domains {
			if d.Name == "default_vm" && d.Active {
				return true
			}
		}
		return false
	}, 20*time.Second, 50*time.Millisecond, "the VMI's guest runs")
	doms := map[string]bool{}
	for _, d := range rep.Domains {
		doms[d.Name] = d.Active
		switch d.Name {
		case "default_vm":
			assert.True(t, d.Owned)
			assert.True(t, d.Virtkit)
			assert.Equal(t, "n1", d.Node)
			assert.Equal(t, string(vmi.UID), d.VMIUID)
		case "legacy_db":
			assert.False(t, d.Owned)
			assert.False(t, d.Virtkit)
		}
	}
	assert.Equal(t, map[string]bool{"default_vm": true, "legacy_db": true}, doms, "the foreign guest is left running")
	assert.Equal(t, "n1", rep.Node)
	assert.False(t, rep.Fenced)
	require.NotNil(t, rep.Watchdog, "the simulated host's watchdog is on by default")
	assert.True(t, rep.Watchdog.Armed)
	assert.Equal(t, []string{"legacy_db"}, foreignNames(rep))

	metricsText := get("/metrics")
	assert.Contains(t, metricsText, "virtkit_node_fenced 0")
	assert.Contains(t, metricsText, "virtkit_node_foreign_domains 1")

	n := &virtkit.Node{}
	require.NoError(t, st.Get(t.Context(), store.Key{Name: "n1"}, n))
	assert.Equal(t, "10s", n.Annotations[virtkit.FenceTimeoutAnnotation], "default: at least 10s")
	assert.NotContains(t, out.String(), "node=n1 node=n1", "one node attribute per line")
}

func foreignNames(rep hostDomainsReply) []string {
	var out []string
	for _, f := range rep.Foreign {
		out = append(out, f.Name)
	}
	return out
}
