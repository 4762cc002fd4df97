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
// other users and the admin group are not affected.
func TestWatchesPerUser(t *testing.T) {
	const limit = 3
	ts := startServer(t, newStore(t), apiserver.GenericOptions{
		MaxWatchesPerUser: limit, Authorizer: legacyAuthorizer(t, watchPolicy)})
	alice := ts.token("alice-token")

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
	watchVMs(t, alice)
	assert.True(t, apierrors.IsTooManyRequests(tryWatch(t, alice, teamAVMs)))
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
