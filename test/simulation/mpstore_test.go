package simulation

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/internal/tcpproxy"
)

// A node process restarted while it is partitioned from etcd waits for the
// store (it does not exit: no cluster-exited violation), does not serve its
// host meanwhile (a guest fault skips it rather than failing), and joins
// once the partition heals.
func TestMultiProcessRestartWhilePartitioned(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process simulation: not in -short")
	}
	etcdBin, bin := mpBinaries(t)
	const always5s = 4 // apply-vm's n: RunStrategy Always with a 5 s grace period
	ops := []Op{
		{Name: "apply-vm", Target: "vm-0", N: always5s, Advance: 6000},
		{Name: "partition", Target: "node-1", Advance: 500},
		{Name: "crash-agent", Target: "node-1"},
		// Longer than the first attempt's deadline to reach etcd (5 s).
		{Name: "restart-agent", Target: "node-1", Advance: 8000},
		{Name: "crash-guest", Target: "vm-0", Advance: 1000},
		{Name: "heal", Target: "node-1", Advance: 5000},
	}
	runWrittenLog(t, etcdBin, bin, ops)
}

// store-latency in the multi-process mode slows every process's link to
// etcd (the controller's and each node's proxy) by the drawn latency
// scaled like the pauses, capped at mpMaxLatency; the final heal ends it.
func TestMultiProcessStoreLatency(t *testing.T) {
	table := map[string]opSpec{}
	for _, s := range mpOperations() {
		table[s.name] = s
	}
	require.Contains(t, table, "store-latency")
	for _, tc := range []struct {
		name string
		opts MultiProcessOptions
		n    int
		want time.Duration
	}{
		{"scaled like the pauses", MultiProcessOptions{}, 3000, 300 * time.Millisecond},
		{"small", MultiProcessOptions{}, 50, 5 * time.Millisecond},
		{"off", MultiProcessOptions{}, 0, 0},
		{"capped", MultiProcessOptions{TimeScale: 1, MaxPause: 20 * time.Second}, 3000, mpMaxLatency},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &multiProcess{nodes: map[string]*mpNode{}, opts: tc.opts.withDefaults()}
			start := func() *tcpproxy.Proxy {
				px, err := tcpproxy.Start(t.Context(), tcpproxy.Options{Target: "127.0.0.1:9"})
				require.NoError(t, err)
				t.Cleanup(func() { _ = px.Close() })
				return px
			}
			m.ctrlProxy = start()
			for _, n := range []string{"node-1", "node-2"} {
				m.names = append(m.names, n)
				m.nodes[n] = &mpNode{proc: &proc{name: n, state: procRunning}, proxy: start()}
			}
			require.NoError(t, table["store-latency"].run(t.Context(), m, Op{Name: "store-latency", N: tc.n}))
			require.Len(t, m.proxies(), 3)
			for _, px := range m.proxies() {
				require.Equal(t, tc.want, px.Latency())
			}
			m.setLatency(0)
			for _, px := range m.proxies() {
				require.Zero(t, px.Latency())
			}
		})
	}
}
