package apiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/apiserver/rbac"
	"github.com/virtkit/virtkit/store"
)

// countingGuestInfo counts the guest-information calls that reach it.
type countingGuestInfo struct{ calls atomic.Int32 }

func (g *countingGuestInfo) GuestOSInfo(context.Context, string, string) (any, error) {
	g.calls.Add(1)
	return map[string]string{"hostname": "vm-0"}, nil
}

func (g *countingGuestInfo) UserList(context.Context, string, string) (any, error) {
	g.calls.Add(1)
	return map[string]any{"items": []any{}}, nil
}

func (g *countingGuestInfo) FilesystemList(context.Context, string, string) (any, error) {
	g.calls.Add(1)
	return map[string]any{"items": []any{}}, nil
}

// snapshot is every object of every kind in the store, as JSON.
func snapshot(t *testing.T, st store.Store) string {
	t.Helper()
	var b strings.Builder
	for _, k := range store.DefaultKinds() {
		gv, err := schema.ParseGroupVersion(k.APIVersion)
		require.NoError(t, err)
		list, err := virtkit.NewObjectList(gv.WithKind(k.Name))
		require.NoError(t, err)
		require.NoError(t, st.List(t.Context(), list, store.ListOptions{}))
		data, err := json.Marshal(list)
		require.NoError(t, err)
		fmt.Fprintf(&b, "%s: %s\n", k.Name, data)
	}
	return b.String()
}

// authzRequest is one request of the denial table.
type authzRequest struct {
	name, method, path, contentType, body string
}

// everyVerb lists a request for every verb on every resource the server's
// discovery reports (the status subresource included), every virtctl
// subresource and the all-namespace list and watch, aimed at namespace ns.
func everyVerb(t *testing.T, ts *testServer, rt http.RoundTripper, ns string) []authzRequest {
	t.Helper()
	get := func(path string, v any) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+path, nil)
		require.NoError(t, err)
		resp, err := (&http.Client{Transport: rt}).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
	}
	var groups metav1.APIGroupList
	get("/apis", &groups)
	var core metav1.APIVersions
	get("/api", &core)
	for _, v := range core.Versions {
		groups.Groups = append(groups.Groups, metav1.APIGroup{PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: v}})
	}
	var out []authzRequest
	for _, g := range groups.Groups {
		if g.Name == "authorization.k8s.io" || g.Name == "authentication.k8s.io" {
			continue // the self reviews answer anyone, about themselves
		}
		var rl metav1.APIResourceList
		base := "/apis/" + g.PreferredVersion.GroupVersion
		if g.Name == "" {
			base = "/api/" + g.PreferredVersion.GroupVersion
		}
		get(base, &rl)
		for _, r := range rl.APIResources {
			res, sub, _ := strings.Cut(r.Name, "/")
			if g.Name == apiserver.SubresourcesGroup {
				method := http.MethodPut
				if r.Verbs[0] == "get" {
					method = http.MethodGet
				}
				out = append(out, authzRequest{name: r.Name, method: method,
					path: fmt.Sprintf("%s/namespaces/%s/%s/vm-0/%s", base, ns, res, sub), body: "{}"})
				continue
			}
			coll := base + "/" + res
			if r.Namespaced {
				coll = fmt.Sprintf("%s/namespaces/%s/%s", base, ns, res)
			}
			one := coll + "/vm-0"
			obj := fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":"vm-0","namespace":%q}}`, rl.GroupVersion, r.Kind, ns)
			if sub == "status" {
				out = append(out,
					authzRequest{name: r.Name + " get", method: http.MethodGet, path: one + "/status"},
					authzRequest{name: r.Name + " update", method: http.MethodPut, path: one + "/status", body: obj},
					authzRequest{name: r.Name + " patch", method: http.MethodPatch, path: one + "/status",
						contentType: "application/merge-patch+json", body: `{"status":{}}`})
				continue
			}
			out = append(out,
				authzRequest{name: r.Name + " get", method: http.MethodGet, path: one},
				authzRequest{name: r.Name + " list", method: http.MethodGet, path: coll},
				authzRequest{name: r.Name + " watch", method: http.MethodGet, path: coll + "?watch=true"})
			if r.Namespaced {
				all := base + "/" + res
				out = append(out,
					authzRequest{name: r.Name + " list all namespaces", method: http.MethodGet, path: all},
					authzRequest{name: r.Name + " watch all namespaces", method: http.MethodGet, path: all + "?watch=true"})
			}
			if !slices.Contains(r.Verbs, "create") {
				continue // a read-only view
			}
			out = append(out,
				authzRequest{name: r.Name + " create", method: http.MethodPost, path: coll, body: obj},
				authzRequest{name: r.Name + " update", method: http.MethodPut, path: one, body: obj},
				authzRequest{name: r.Name + " merge patch", method: http.MethodPatch, path: one,
					contentType: "application/merge-patch+json", body: `{"metadata":{"labels":{"x":"y"}}}`},
				authzRequest{name: r.Name + " json patch", method: http.MethodPatch, path: one,
					contentType: "application/json-patch+json", body: `[{"op":"add","path":"/metadata/labels","value":{"x":"y"}}]`},
				authzRequest{name: r.Name + " strategic patch", method: http.MethodPatch, path: one,
					contentType: "application/strategic-merge-patch+json", body: `{"metadata":{"labels":{"x":"y"}}}`},
				authzRequest{name: r.Name + " delete", method: http.MethodDelete, path: one},
				authzRequest{name: r.Name + " deletecollection", method: http.MethodDelete, path: coll},
			)
		}
	}
	return out
}

func doAuthz(t *testing.T, ts *testServer, rt http.RoundTripper, r authzRequest) (int, metav1.Status) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.method, ts.URL+r.path, strings.NewReader(r.body))
	require.NoError(t, err)
	ct := r.contentType
	if ct == "" {
		ct = "application/json"
	}
	req.Header.Set("Content-Type", ct)
	resp, err := (&http.Client{Transport: rt}).Do(req)
	require.NoError(t, err, r.name)
	defer resp.Body.Close()
	var st metav1.Status
	if resp.StatusCode >= 400 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		_ = json.Unmarshal(data, &st)
	}
	return resp.StatusCode, st
}

// A user who may touch only namespace team-a gets Forbidden for every verb
// on every resource and subresource anywhere else, through the real TLS
// server, and the store does not change; in team-a the same requests are
// not refused.
func TestForbiddenEveryVerb(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	vm := &virtkit.VirtualMachine{}
	vm.Name, vm.Namespace = "vm-0", "default"
	rs := virtkit.RunStrategyAlways
	vm.Spec.RunStrategy = &rs
	vm.Spec.Template = &virtkit.VirtualMachineInstanceTemplateSpec{}
	require.NoError(t, st.Create(ctx, vm))
	vmi := &virtkit.VirtualMachineInstance{}
	vmi.Name, vmi.Namespace = "vm-0", "default"
	require.NoError(t, st.Create(ctx, vmi))
	vmi.Status.Phase = virtkit.Running
	vmi.Status.NodeName = "node-1"
	require.NoError(t, st.UpdateStatus(ctx, vmi))
	gi := &countingGuestInfo{}
	ts := startServer(t, st, apiserver.GenericOptions{GuestInfo: gi})
	alice, err := rest.TransportFor(ts.token("alice-token"))
	require.NoError(t, err)
	admin, err := rest.TransportFor(ts.admin())
	require.NoError(t, err)

	reqs := everyVerb(t, ts, admin, "default")
	seen := map[string]bool{}
	for _, r := range reqs {
		seen[strings.Fields(r.name)[0]] = true
		seen[r.path] = true
	}
	for _, want := range []string{"virtualmachines", "virtualmachines/status", "virtualmachineinstances",
		"virtualmachineinstancemigrations", "datavolumes", "events", "virtualmachines/start", "virtualmachines/stop",
		"virtualmachines/restart", "virtualmachines/migrate", "virtualmachines/softreboot", "virtualmachineinstances/pause",
		"virtualmachineinstances/unpause", "virtualmachineinstances/softreboot", "virtualmachineinstances/guestosinfo",
		"virtualmachineinstances/userlist", "virtualmachineinstances/filesystemlist", "/api/v1/namespaces/default/events"} {
		assert.True(t, seen[want], "the table covers %s", want)
	}

	before := snapshot(t, st)
	for _, r := range reqs {
		code, status := doAuthz(t, ts, alice, r)
		assert.Equal(t, http.StatusForbidden, code, "%s %s %s", r.name, r.method, r.path)
		assert.Equal(t, metav1.StatusReasonForbidden, status.Reason, r.name)
		assert.Contains(t, status.Message, `User "alice" cannot `, r.name)
	}
	assert.Equal(t, before, snapshot(t, st), "nothing changed in the store")
	assert.Zero(t, gi.calls.Load(), "no guest was asked")

	// In her own namespace the same requests pass authorization (they may
	// fail for other reasons: the objects are not there), but for writes of
	// the status, which are the control plane's, and updates and patches
	// of the resources a rule without resources does not make writable
	// (rbac.LegacyWritableResources), pods/eviction among them: an eviction
	// is only ever created.
	writable := rbac.LegacyWritableResources()
	for _, r := range everyVerb(t, ts, admin, "team-a") {
		if strings.HasSuffix(r.name, "all namespaces") || !strings.Contains(r.path, "/namespaces/team-a/") {
			continue
		}
		code, status := doAuthz(t, ts, alice, r)
		res := strings.Fields(r.name)[0]
		write := r.method == http.MethodPut || r.method == http.MethodPatch
		if strings.HasSuffix(r.path, "/status") && r.method != http.MethodGet ||
			write && (!strings.Contains(res, "/") || res == "pods/eviction") && !slices.Contains(writable, res) {
			assert.Equal(t, http.StatusForbidden, code, "%s in team-a", r.name)
			assert.Contains(t, status.Message, `User "alice" cannot `, r.name)
			continue
		}
		assert.NotEqual(t, http.StatusForbidden, code, "%s in team-a: %s", r.name, status.Message)
	}
}
