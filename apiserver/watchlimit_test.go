package apiserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/virtkit/virtkit/apiserver"
)

// watchPolicy lets alice and bob edit team-a.
const watchPolicy = `rules:
- user: alice
  namespaces: [team-a]
- user: bob
  namespaces: [team-a]
`

const teamAVMs = "/apis/kubevirt.io/v1/namespaces/team-a/virtualmachines"

// watchVMs opens a client-go watch of team-a's VMs as cfg's user.
func watchVMs(t *testing.T, cfg *rest.Config) watch.Interface {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	w, err := dyn.Resource(vmGVR).Namespace("team-a").Watch(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	return w
}

// tryWatch opens a watch of path as cfg's user through client-go without
// its retries on 429 (it honours Retry-After ten times by default),
// closing it at once when it opens.
func tryWatch(t *testing.T, cfg *rest.Config, path string) error {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	w, err := cs.CoreV1().RESTClient().Get().AbsPath(path).Param("watch", "true").MaxRetries(0).Watch(t.Context())
	if err == nil {
		w.Stop()
	}
	return err
}

// A user's watches are bounded: past the bound a watch is refused with
// 429 and a TooManyRequests Status, a closed watch frees its slot, and
// other users and the admin group are not affected. Each refusal is
// counted in virtkit_apiserver_watches_refused_total{reason="user_limit"}.
func TestWatchesPerUser(t *testing.T) {
	const limit = 3
	reg := prometheus.NewPedanticRegistry()
	ts := startServer(t, newStore(t), apiserver.GenericOptions{
		MaxWatchesPerUser: limit, Authorizer: legacyAuthorizer(t, watchPolicy), Registerer: reg})
	alice := ts.token("alice-token")
	assert.Zero(t, refusedWatches(t, reg), "exported at 0 before any refusal")

	var open []watch.Interface
	for range limit {
		open = append(open, watchVMs(t, alice))
	}

	err := tryWatch(t, alice, teamAVMs)
	require.Error(t, err)
	assert.True(t, apierrors.IsTooManyRequests(err), "%v", err)
	assert.Equal(t, metav1.StatusReasonTooManyRequests, apierrors.ReasonForError(err))
	assert.Contains(t, err.Error(), `user "alice" has 3 watches open`)
	delay, ok := apierrors.SuggestsClientDelay(err)
	assert.True(t, ok && delay == 1, "retry after %d s", delay)

	// The Status and Retry-After on the wire, for a core v1 watch too; a
	// list is no watch and is served.
	c := aliceClient(t, ts)
	for _, path := range []string{teamAVMs, "/api/v1/namespaces/team-a/configmaps"} {
		resp, err := c.Get(ts.URL + path + "?watch=true")
		require.NoError(t, err)
		var st metav1.Status
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
		resp.Body.Close()
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, path)
		assert.Equal(t, "1", resp.Header.Get("Retry-After"), path)
		assert.Equal(t, metav1.StatusReasonTooManyRequests, st.Reason, path)
		assert.Equal(t, "Status", st.Kind, path)
	}
	resp, err := c.Get(ts.URL + teamAVMs)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "a list is not counted")
	assert.Equal(t, 3.0, refusedWatches(t, reg), "one per refused watch")

	// Another user, and the admin group, still watch.
	require.NoError(t, tryWatch(t, ts.cert(t, "bob"), teamAVMs))
	for range limit + 1 {
		watchVMs(t, ts.admin())
	}

	// A watch that ends frees its slot (once the server sees it end), and
	// the bound holds again after.
	open[0].Stop()
	require.Eventually(t, func() bool {
		err := tryWatch(t, alice, teamAVMs)
		require.True(t, err == nil || apierrors.IsTooManyRequests(err), "%v", err)
		return err == nil
	}, 30*time.Second, 10*time.Millisecond)
	before := refusedWatches(t, reg)
	watchVMs(t, alice)
	assert.True(t, apierrors.IsTooManyRequests(tryWatch(t, alice, teamAVMs)))
	assert.Equal(t, before+1, refusedWatches(t, reg))
}

// refusedWatches reads virtkit_apiserver_watches_refused_total{reason="user_limit"} from reg.
func refusedWatches(t *testing.T, reg prometheus.Gatherer) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != apiserver.WatchesRefusedMetric {
			continue
		}
		require.Equal(t, dto.MetricType_COUNTER, f.GetType())
		for _, m := range f.GetMetric() {
			require.Len(t, m.GetLabel(), 1)
			if m.GetLabel()[0].GetName() == "reason" && m.GetLabel()[0].GetValue() == apiserver.WatchRefusedUserLimit {
				return m.GetCounter().GetValue()
			}
		}
	}
	require.FailNow(t, "not exported", "%s{reason=%q}", apiserver.WatchesRefusedMetric, apiserver.WatchRefusedUserLimit)
	return 0
}

// A Registerer that already holds the server's metrics refuses a second
// server's: NewGeneric reports it instead of serving without them.
func TestWatchesRefusedMetricRegistration(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, err := apiserver.NewGeneric(apiserver.GenericOptions{Store: newStore(t), Registerer: reg})
	require.NoError(t, err)
	_, err = apiserver.NewGeneric(apiserver.GenericOptions{Store: newStore(t), Registerer: reg})
	require.ErrorIs(t, err, apiserver.ErrOptions)
	assert.Contains(t, err.Error(), "Registerer")
}

// kubectl get --watch at the bound: refused with 429, it retries after
// the Retry-After and gets in once a slot is freed.
func TestWatchesPerUserKubectl(t *testing.T) {
	requireKubectlBinary(t)
	ts := startServer(t, newStore(t), apiserver.GenericOptions{
		MaxWatchesPerUser: 1, Authorizer: legacyAuthorizer(t, watchPolicy)})
	held := watchVMs(t, ts.token("alice-token"))

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", ts.kubeconfig(t, "alice-token"), "-n", "team-a",
		"get", "vm", "--watch", "-v=6")
	cmd.Env = append(os.Environ(), "KUBECONFIG=", "HOME="+t.TempDir())
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { cancel(); _ = cmd.Wait() }()

	var seen []string
	refused, watching := false, false
	for sc := bufio.NewScanner(stderr); sc.Scan(); {
		line := sc.Text()
		seen = append(seen, line)
		if !strings.Contains(line, "watch=true") {
			continue
		}
		if strings.Contains(line, "429") && !refused {
			refused = true
			held.Stop()
		}
		if strings.Contains(line, "200 OK") {
			watching = true
			break
		}
	}
	assert.True(t, refused, "kubectl's watch is refused at the bound: %q", seen)
	assert.True(t, watching, "kubectl's retry gets in once the slot is free: %q", seen)
}
