package subresources_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver/subresources"
	"github.com/virtkit/virtkit/store"
)

const base = "/apis/subresources.kubevirt.io/v1"

// recorder is an Authorizer that records what it is asked and allows
// only the verbs and resources in allow ("update virtualmachines/start").
type recorder struct {
	mu    sync.Mutex
	asked []authorizer.Attributes
	allow map[string]bool
}

func (a *recorder) authorizer() authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.asked = append(a.asked, attrs)
		res := attrs.GetResource()
		if attrs.GetSubresource() != "" {
			res += "/" + attrs.GetSubresource()
		}
		if a.allow[attrs.GetVerb()+" "+res] {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "no rule grants it", nil
	})
}

// serve runs one request of user bob through h.
func serve(t *testing.T, h http.Handler, method, path, body string) (*httptest.ResponseRecorder, metav1.Status) {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r = r.WithContext(request.WithUser(r.Context(), &user.DefaultInfo{Name: "bob", Groups: []string{"team"}}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var st metav1.Status
	if w.Code >= 300 {
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &st), "body %s", w.Body)
		assert.Equal(t, "Status", st.Kind)
	}
	return w, st
}

func newHandler(t *testing.T, opts subresources.Options) (*subresources.Handler, store.Store) {
	t.Helper()
	if opts.Store == nil {
		opts.Store = store.NewMemory()
	}
	h, err := subresources.New(opts)
	require.NoError(t, err)
	return h, opts.Store
}

// Every subresource is authorized with the attributes kube-apiserver
// builds for its path and method, KubeVirt's roles' verbs, and refused
// with kube-apiserver's Forbidden message before anything is done.
func TestAuthorizationAttributes(t *testing.T) {
	tests := []struct {
		method, path                     string
		verb, resource, subresource, obj string
	}{
		{http.MethodGet, "/namespaces/ns/virtualmachineinstances/vm/console", "get", "virtualmachineinstances", "console", "vm"},
		{http.MethodGet, "/namespaces/ns/virtualmachineinstances/vm/vnc", "get", "virtualmachineinstances", "vnc", "vm"},
		{http.MethodGet, "/namespaces/ns/virtualmachineinstances/vm/vnc/screenshot", "get", "virtualmachineinstances", "vnc/screenshot", "vm"},
		{http.MethodGet, "/namespaces/ns/virtualmachineinstances/vm/portforward/22/tcp", "get", "virtualmachineinstances", "portforward", "vm"},
		{http.MethodGet, "/namespaces/ns/virtualmachines/vm/portforward/22", "get", "virtualmachines", "portforward", "vm"},
		{http.MethodPut, "/namespaces/ns/virtualmachines/vm/start", "update", "virtualmachines", "start", "vm"},
		{http.MethodPut, "/namespaces/ns/virtualmachines/vm/stop", "update", "virtualmachines", "stop", "vm"},
		{http.MethodPut, "/namespaces/ns/virtualmachines/vm/migrate", "update", "virtualmachines", "migrate", "vm"},
		{http.MethodGet, "/namespaces/ns/virtualmachines/vm/expand-spec", "get", "virtualmachines", "expand-spec", "vm"},
		{http.MethodPut, "/namespaces/ns/virtualmachineinstances/vm/pause", "update", "virtualmachineinstances", "pause", "vm"},
		{http.MethodGet, "/namespaces/ns/virtualmachineinstances/vm/guestosinfo", "get", "virtualmachineinstances", "guestosinfo", "vm"},
		{http.MethodPut, "/namespaces/ns/expand-vm-spec", "update", "expand-vm-spec", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			rec := &recorder{}
			gi := &fakeGuestInfo{}
			h, _ := newHandler(t, subresources.Options{Authorizer: rec.authorizer(), GuestInfo: gi})
			w, st := serve(t, h, tt.method, base+tt.path, "{}")
			require.Equal(t, http.StatusForbidden, w.Code, w.Body.String())
			require.Len(t, rec.asked, 1)
			a := rec.asked[0]
			assert.Equal(t, "bob", a.GetUser().GetName())
			assert.Equal(t, []string{"team"}, a.GetUser().GetGroups())
			assert.Equal(t, tt.verb, a.GetVerb())
			assert.Equal(t, "subresources.kubevirt.io", a.GetAPIGroup())
			assert.Equal(t, "v1", a.GetAPIVersion())
			assert.Equal(t, "ns", a.GetNamespace())
			assert.Equal(t, tt.resource, a.GetResource())
			assert.Equal(t, tt.subresource, a.GetSubresource())
			assert.Equal(t, tt.obj, a.GetName())
			assert.True(t, a.IsResourceRequest())
			res := tt.resource
			if tt.subresource != "" {
				res += "/" + tt.subresource
			}
			assert.True(t, strings.HasSuffix(st.Message, ` is forbidden: User "bob" cannot `+tt.verb+` resource "`+res+
				`" in API group "subresources.kubevirt.io" in the namespace "ns": no rule grants it`), st.Message)
			assert.Equal(t, metav1.StatusReasonForbidden, st.Reason)
			assert.Zero(t, gi.calls, "nothing reached the guest")
		})
	}
}

// A request whose context carries no user is Unauthorized: the handler
// relies on the server's authentication.
func TestNoUser(t *testing.T) {
	h, _ := newHandler(t, subresources.Options{})
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, base+"/namespaces/ns/virtualmachineinstances/vm/guestosinfo", nil))
	assert.Equal(t, http.StatusUnauthorized, w.Code)
}

// New refuses Options without a Store.
func TestNewWithoutStore(t *testing.T) {
	_, err := subresources.New(subresources.Options{})
	require.ErrorIs(t, err, subresources.ErrOptions)
}

// fakeGuestInfo answers every guest-agent call with the VMI's name.
type fakeGuestInfo struct{ calls int }

func (g *fakeGuestInfo) answer(name string) (any, error) {
	g.calls++
	if name == "missing" {
		return nil, store.ErrNotFound
	}
	return map[string]any{"hostname": name}, nil
}

func (g *fakeGuestInfo) GuestOSInfo(_ context.Context, _, name string) (any, error) {
	return g.answer(name)
}
func (g *fakeGuestInfo) UserList(_ context.Context, _, name string) (any, error) {
	return g.answer(name)
}
func (g *fakeGuestInfo) FilesystemList(_ context.Context, _, name string) (any, error) {
	return g.answer(name)
}

// virtctl's verbs act on the store and answer as KubeVirt does; streams
// without node credentials, unsupported and unknown verbs, and wrong
// methods get their statuses.
func TestActions(t *testing.T) {
	halted := virtkit.RunStrategyHalted
	tests := []struct {
		name, method, path, body string
		guest                    bool
		wantCode                 int
		wantIn                   string // in the body
	}{
		{name: "start", method: http.MethodPut, path: "/namespaces/ns/virtualmachines/vm/start", wantCode: http.StatusAccepted},
		{name: "start dry run", method: http.MethodPut, path: "/namespaces/ns/virtualmachines/vm/start", body: `{"dryRun":["All"]}`, wantCode: http.StatusAccepted},
		{name: "start missing", method: http.MethodPut, path: "/namespaces/ns/virtualmachines/nowhere/start", wantCode: http.StatusNotFound},
		{name: "start missing dry run", method: http.MethodPut, path: "/namespaces/ns/virtualmachines/nowhere/start", body: `{"dryRun":["All"]}`, wantCode: http.StatusNotFound},
		{name: "start bad options", method: http.MethodPut, path: "/namespaces/ns/virtualmachines/vm/start", body: `{"paused":"yes"}`, wantCode: http.StatusBadRequest, wantIn: "start options"},
		{name: "start with GET", method: http.MethodGet, path: "/namespaces/ns/virtualmachines/vm/start", wantCode: http.StatusMethodNotAllowed},
		{name: "migrate not running", method: http.MethodPut, path: "/namespaces/ns/virtualmachines/vm/migrate", wantCode: http.StatusConflict, wantIn: "not running"},
		{name: "unknown verb", method: http.MethodPut, path: "/namespaces/ns/virtualmachines/vm/fly", wantCode: http.StatusNotFound},
		{name: "addvolume without body", method: http.MethodPut, path: "/namespaces/ns/virtualmachines/vm/addvolume", wantCode: http.StatusBadRequest, wantIn: "Request with no body"},
		{name: "addvolume without disk", method: http.MethodPut, path: "/namespaces/ns/virtualmachines/vm/addvolume",
			body: `{"name":"d","volumeSource":{"persistentVolumeClaim":{"claimName":"c"}}}`, wantCode: http.StatusBadRequest, wantIn: "AddVolumeOptions requires disk to not be nil"},
		{name: "addvolume to a VM", method: http.MethodPut, path: "/namespaces/ns/virtualmachines/vm/addvolume",
			body: `{"name":"d","disk":{"disk":{"bus":"scsi"}},"volumeSource":{"persistentVolumeClaim":{"claimName":"c","hotpluggable":true}}}`, wantCode: http.StatusAccepted},
		{name: "addvolume virtio", method: http.MethodPut, path: "/namespaces/ns/virtualmachines/vm/addvolume",
			body: `{"name":"d","disk":{"disk":{"bus":"virtio"}},"volumeSource":{"persistentVolumeClaim":{"claimName":"c"}}}`, wantCode: http.StatusUnprocessableEntity, wantIn: "spec.template.spec.domain.devices.disks[0].disk.bus"},
		{name: "removevolume from a VM, missing", method: http.MethodPut, path: "/namespaces/ns/virtualmachines/vm/removevolume",
			body: `{"name":"d"}`, wantCode: http.StatusConflict, wantIn: "Unable to remove volume [d] because it does not exist"},
		{name: "removevolume missing VMI", method: http.MethodPut, path: "/namespaces/ns/virtualmachineinstances/vm/removevolume", body: `{"name":"d"}`, wantCode: http.StatusNotFound},
		{name: "version", method: http.MethodGet, path: "/version", wantCode: http.StatusOK, wantIn: `"gitVersion":"v9.9.9-test"`},
		{name: "guest info without a source", method: http.MethodGet, path: "/namespaces/ns/virtualmachineinstances/vm/guestosinfo", wantCode: http.StatusConflict},
		{name: "guest info", method: http.MethodGet, path: "/namespaces/ns/virtualmachineinstances/vm/userlist", guest: true, wantCode: http.StatusOK, wantIn: `"hostname":"vm"`},
		{name: "guest info missing", method: http.MethodGet, path: "/namespaces/ns/virtualmachineinstances/missing/filesystemlist", guest: true, wantCode: http.StatusNotFound},
		{name: "expand-spec stored", method: http.MethodGet, path: "/namespaces/ns/virtualmachines/vm/expand-spec", wantCode: http.StatusOK, wantIn: `"name":"vm"`},
		{name: "expand-vm-spec given", method: http.MethodPut, path: "/namespaces/ns/expand-vm-spec",
			body: `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"given"},"spec":{"template":{"spec":{"domain":{"devices":{}}}}}}`, wantCode: http.StatusOK, wantIn: `"namespace":"ns"`},
		{name: "expand-vm-spec other namespace", method: http.MethodPut, path: "/namespaces/ns/expand-vm-spec",
			body: `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"given","namespace":"other"},"spec":{"template":{"spec":{"domain":{"devices":{}}}}}}`, wantCode: http.StatusBadRequest},
		{name: "console without upgrade", method: http.MethodGet, path: "/namespaces/ns/virtualmachineinstances/vm/console", wantCode: http.StatusBadRequest, wantIn: "WebSocket upgrade"},
		{name: "portforward port 0", method: http.MethodGet, path: "/namespaces/ns/virtualmachineinstances/vm/portforward/0", wantCode: http.StatusBadRequest, wantIn: "1-65535"},
		{name: "screenshot without node credentials", method: http.MethodGet, path: "/namespaces/ns/virtualmachineinstances/vm/vnc/screenshot", wantCode: http.StatusServiceUnavailable, wantIn: "no credentials for node agents"},
		{name: "screenshot bad moveCursor", method: http.MethodGet, path: "/namespaces/ns/virtualmachineinstances/vm/vnc/screenshot?moveCursor=maybe", wantCode: http.StatusBadRequest},
		{name: "console with PUT", method: http.MethodPut, path: "/namespaces/ns/virtualmachineinstances/vm/console", wantCode: http.StatusMethodNotAllowed},
		{name: "outside the group's version", method: http.MethodGet, path: "/apis/subresources.kubevirt.io/v2/namespaces/ns/virtualmachines/vm/start", wantCode: http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := subresources.Options{Version: "v9.9.9-test"}
			if tt.guest {
				opts.GuestInfo = &fakeGuestInfo{}
			}
			h, st := newHandler(t, opts)
			vm := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm"},
				Spec: virtkit.VirtualMachineSpec{RunStrategy: &halted, Template: &virtkit.VirtualMachineInstanceTemplateSpec{}}}
			require.NoError(t, st.Create(t.Context(), vm))
			path := tt.path
			if !strings.HasPrefix(path, "/apis/") {
				path = base + path
			}
			w, _ := serve(t, h, tt.method, path, tt.body)
			assert.Equal(t, tt.wantCode, w.Code, w.Body.String())
			assert.Contains(t, w.Body.String(), tt.wantIn)
			got := &virtkit.VirtualMachine{}
			require.NoError(t, st.Get(t.Context(), store.Key{Namespace: "ns", Name: "vm"}, got))
			rs, err := got.RunStrategy()
			require.NoError(t, err)
			if tt.name == "start" {
				assert.Equal(t, virtkit.RunStrategyAlways, rs, "started")
			} else {
				assert.Equal(t, virtkit.RunStrategyHalted, rs, "nothing changed")
			}
		})
	}
}

// Discovery: the group and its version as /apis lists them, the
// subresources with their verbs, and the aggregated form with each
// parent resource and its subresources.
func TestDiscovery(t *testing.T) {
	h, _ := newHandler(t, subresources.Options{})
	w, _ := serve(t, h, http.MethodGet, "/apis/subresources.kubevirt.io", "")
	require.Equal(t, http.StatusOK, w.Code)
	var g metav1.APIGroup
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &g))
	assert.Equal(t, subresources.APIGroup(), g)
	assert.Equal(t, "subresources.kubevirt.io/v1", g.PreferredVersion.GroupVersion)

	w, _ = serve(t, h, http.MethodGet, base+"/", "")
	require.Equal(t, http.StatusOK, w.Code)
	var rl metav1.APIResourceList
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &rl))
	verbs := map[string]string{}
	for _, r := range rl.APIResources {
		require.Len(t, r.Verbs, 1, r.Name)
		assert.True(t, r.Namespaced, r.Name)
		verbs[r.Name] = r.Verbs[0]
	}
	for name, verb := range map[string]string{
		"virtualmachines/start": "update", "virtualmachines/expand-spec": "get", "virtualmachines/portforward": "get",
		"virtualmachineinstances/console": "get", "virtualmachineinstances/vnc/screenshot": "get",
		"virtualmachineinstances/pause": "update", "virtualmachineinstances/guestosinfo": "get",
	} {
		assert.Equal(t, verb, verbs[name], name)
	}

	w, _ = serve(t, h, http.MethodGet, "/apis/subresources.kubevirt.io/v2", "")
	assert.Equal(t, http.StatusNotFound, w.Code)
	w, _ = serve(t, h, http.MethodPost, base, "")
	assert.Equal(t, http.StatusMethodNotAllowed, w.Code)

	vd, err := subresources.APIVersionDiscovery()
	require.NoError(t, err)
	assert.Equal(t, "v1", vd.Version)
	subs := map[string][]string{}
	for _, r := range vd.Resources {
		assert.Equal(t, apidiscoveryv2.ScopeNamespace, r.Scope)
		for _, s := range r.Subresources {
			subs[r.Resource] = append(subs[r.Resource], s.Subresource)
		}
	}
	assert.Len(t, vd.Resources, 2)
	assert.Contains(t, subs["virtualmachines"], "start")
	assert.Contains(t, subs["virtualmachineinstances"], "vnc/screenshot")
}

// LongRunning tells streams from the other requests.
func TestLongRunning(t *testing.T) {
	for path, want := range map[string]bool{
		base + "/namespaces/ns/virtualmachineinstances/vm/console":          true,
		base + "/namespaces/ns/virtualmachineinstances/vm/portforward/22":   true,
		base + "/namespaces/ns/virtualmachines/vm/portforward/22/udp":       true,
		base + "/namespaces/ns/virtualmachineinstances/vm/vnc/screenshot":   false,
		base + "/namespaces/ns/virtualmachines/vm/start":                    false,
		"/apis/kubevirt.io/v1/namespaces/ns/virtualmachineinstances/vm/vnc": false,
	} {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		assert.Equal(t, want, subresources.LongRunning(r, nil), path)
	}
	r := httptest.NewRequest(http.MethodPut, base+"/namespaces/ns/virtualmachineinstances/vm/console", io.NopCloser(strings.NewReader("")))
	assert.False(t, subresources.LongRunning(r, nil), "not a GET")
}
