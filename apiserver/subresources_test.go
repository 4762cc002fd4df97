package apiserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

// virtctl's subresources drive a VM through start, pause, unpause,
// migrate, restart and stop on a simulated cluster; alice may not use them
// outside her namespace.
func TestSubresources(t *testing.T) {
	c, err := cluster.New(cluster.Options{Nodes: 2, Store: newStore(t)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	// A masquerade pod network keeps the VMI live-migratable.
	ts := startServer(t, c.Store(), apiserver.GenericOptions{
		Defaults: virtkit.DefaultOptions{PodNetworkBinding: virtkit.NetworkBindingMasquerade},
	})
	dc, err := dynamic.NewForConfig(ts.admin())
	require.NoError(t, err)
	_, err = dc.Resource(vmGVR).Namespace("default").Create(ctx, vmObject(t, "vm-0", "Halted"), metav1.CreateOptions{})
	require.NoError(t, err)

	tr, err := rest.TransportFor(ts.admin())
	require.NoError(t, err)
	alice, err := rest.TransportFor(ts.token("alice-token"))
	require.NoError(t, err)
	call := func(rt http.RoundTripper, method, path, body string) int {
		req, err := http.NewRequestWithContext(ctx, method, ts.URL+"/apis/subresources.kubevirt.io/v1/namespaces/default/"+path, strings.NewReader(body))
		require.NoError(t, err)
		resp, err := (&http.Client{Transport: rt}).Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	wait := func(what string, cond func(*virtkit.VirtualMachineInstance, bool) bool) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, err := cluster.WaitFor(wctx, c.Store(), store.Key{Namespace: "default", Name: "vm-0"},
			func() *virtkit.VirtualMachineInstance { return &virtkit.VirtualMachineInstance{} },
			&virtkit.VirtualMachineInstanceList{}, cond)
		require.NoError(t, err, what)
	}
	running := func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.Status.Phase == virtkit.Running
	}

	assert.Equal(t, http.StatusForbidden, call(alice, http.MethodPut, "virtualmachines/vm-0/start", "{}"), "alice may not start")
	assert.Equal(t, http.StatusNotFound, call(tr, http.MethodPut, "virtualmachines/nope/start", "{}"))
	assert.Equal(t, http.StatusAccepted, call(tr, http.MethodPut, "virtualmachines/vm-0/start", "{}"))
	wait("running after start", running)
	assert.Equal(t, http.StatusConflict, call(tr, http.MethodPut, "virtualmachines/vm-0/start", "{}"), "already running")

	assert.Equal(t, http.StatusForbidden, call(alice, http.MethodPut, "virtualmachineinstances/vm-0/pause", "{}"))
	assert.Equal(t, http.StatusAccepted, call(tr, http.MethodPut, "virtualmachineinstances/vm-0/pause", "{}"))
	paused := func(v *virtkit.VirtualMachineInstance, found bool) bool {
		for _, cond := range v.Status.Conditions {
			if cond.Type == virtkit.VirtualMachineInstancePaused && cond.Status == "True" {
				return true
			}
		}
		return false
	}
	wait("paused", paused)
	assert.Equal(t, http.StatusAccepted, call(tr, http.MethodPut, "virtualmachineinstances/vm-0/unpause", "{}"))
	wait("unpaused", func(v *virtkit.VirtualMachineInstance, found bool) bool { return found && !paused(v, found) })

	assert.Equal(t, http.StatusAccepted, call(tr, http.MethodPut, "virtualmachines/vm-0/migrate", "{}"))
	migs, err := dc.Resource(vmGVR.GroupVersion().WithResource("virtualmachineinstancemigrations")).Namespace("default").
		List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, migs.Items, 1, "migrate creates a migration")

	assert.Equal(t, http.StatusConflict, call(tr, http.MethodGet, "virtualmachineinstances/vm-0/guestosinfo", ""),
		"no guest information source")
	assert.Equal(t, http.StatusBadRequest, call(tr, http.MethodPut, "virtualmachines/vm-0/stop", "{not json"))
	assert.Equal(t, http.StatusForbidden, call(alice, http.MethodPut, "virtualmachines/vm-0/stop", "{}"))
	assert.Equal(t, http.StatusAccepted, call(tr, http.MethodPut, "virtualmachines/vm-0/stop", `{"gracePeriod":0}`))
	wait("gone after stop", func(_ *virtkit.VirtualMachineInstance, found bool) bool { return !found })
	vm, err := dc.Resource(vmGVR).Namespace("default").Get(ctx, "vm-0", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "Halted", vm.Object["spec"].(map[string]any)["runStrategy"])
}
