package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/store"
)

// SubresourcesGroup is the API group of virtctl's subresources (version v1).
const SubresourcesGroup = "subresources.kubevirt.io"

func subresourcesGV() schema.GroupVersion {
	return schema.GroupVersion{Group: SubresourcesGroup, Version: "v1"}
}

// GuestInfo answers the guest-agent subresources of a VMI (the node agent
// running it: node.Agent has these methods). Each returns a
// JSON-serializable value, or an error (ErrNoGuestInfo-like errors become
// 409 Conflict answers, as KubeVirt's "VMI does not have guest agent
// connected").
type GuestInfo interface {
	GuestOSInfo(ctx context.Context, namespace, name string) (any, error)
	UserList(ctx context.Context, namespace, name string) (any, error)
	FilesystemList(ctx context.Context, namespace, name string) (any, error)
}

// subresource is one of virtctl's verbs.
type subresource struct {
	resource string // virtualmachines or virtualmachineinstances
	name     string
	verb     string // authorization verb: update (PUT) or get (GET)
}

func subresourceList() []subresource {
	return []subresource{
		{"virtualmachines", "start", "update"},
		{"virtualmachines", "stop", "update"},
		{"virtualmachines", "restart", "update"},
		{"virtualmachines", "migrate", "update"},
		{"virtualmachines", "softreboot", "update"},
		{"virtualmachines", "expand-spec", "get"},
		{"virtualmachineinstances", "pause", "update"},
		{"virtualmachineinstances", "unpause", "update"},
		{"virtualmachineinstances", "softreboot", "update"},
		{"virtualmachineinstances", "guestosinfo", "get"},
		{"virtualmachineinstances", "userlist", "get"},
		{"virtualmachineinstances", "filesystemlist", "get"},
	}
}

func (s *Server) subresourceResources() *metav1.APIResourceList {
	out := &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: subresourcesGV().String(),
	}
	for _, sr := range subresourceList() {
		kind := "VirtualMachine"
		if sr.resource == "virtualmachineinstances" {
			kind = "VirtualMachineInstance"
		}
		out.APIResources = append(out.APIResources, metav1.APIResource{
			Name: sr.resource + "/" + sr.name, Namespaced: true, Kind: kind, Verbs: metav1.Verbs{sr.verb},
		})
	}
	out.APIResources = append(out.APIResources, streamResources()...)
	return out
}

// serveSubresource answers /apis/subresources.kubevirt.io/v1/namespaces/NS/
// {virtualmachines,virtualmachineinstances}/NAME/VERB.
func (s *Server) serveSubresource(w http.ResponseWriter, r *http.Request, user *User) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) == 4 && parts[3] == "version":
		if r.Method != http.MethodGet {
			s.writeError(w, r, apierrors.NewMethodNotSupported(schema.GroupResource{Group: SubresourcesGroup, Resource: "version"}, r.Method))
			return
		}
		s.writeJSONValue(w, http.StatusOK, s.subresourcesVersion())
		return
	case len(parts) == 6 && parts[3] == "namespaces" && parts[5] == "expand-spec":
		s.serveExpandSpec(w, r, user, parts[4])
		return
	case len(parts) == 8 && unsupportedSubresources[parts[7]] != "" &&
		(parts[5] == "virtualmachines" || parts[5] == "virtualmachineinstances"):
		gr := schema.GroupResource{Group: SubresourcesGroup, Resource: parts[5]}
		s.writeError(w, r, notImplemented(gr, parts[6], parts[7], unsupportedSubresources[parts[7]]))
		return
	}
	// apis subresources.kubevirt.io v1 namespaces NS RESOURCE NAME VERB
	if len(parts) != 8 || parts[3] != "namespaces" {
		s.writeError(w, r, apierrors.NewNotFound(schema.GroupResource{Group: SubresourcesGroup}, r.URL.Path))
		return
	}
	ns, resource, name, verb := parts[4], parts[5], parts[6], parts[7]
	var sr *subresource
	for _, c := range subresourceList() {
		if c.resource == resource && c.name == verb {
			sr = &c
			break
		}
	}
	gr := schema.GroupResource{Group: SubresourcesGroup, Resource: resource}
	if sr == nil {
		s.writeError(w, r, apierrors.NewNotFound(gr, name+"/"+verb))
		return
	}
	if want := map[string]string{"update": http.MethodPut, "get": http.MethodGet}[sr.verb]; r.Method != want {
		s.writeError(w, r, apierrors.NewMethodNotSupported(gr, r.Method))
		return
	}
	if s.opts.Authorizer != nil {
		a := Attributes{User: user, Verb: sr.verb, Namespace: ns, Group: gr.Group, Resource: resource, Subresource: verb, Name: name}
		if err := s.opts.Authorizer.Authorize(r.Context(), a); err != nil {
			s.writeError(w, r, apierrors.NewForbidden(gr, name, fmt.Errorf("User %q cannot %s resource %q in API group %q in the namespace %q",
				user.Name, sr.verb, resource+"/"+verb, gr.Group, ns)))
			return
		}
	}
	body, err := s.readBody(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	decode := func(v any) error {
		if len(body) == 0 {
			return nil
		}
		if err := json.Unmarshal(body, v); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("%s options: %v", verb, err))
		}
		return nil
	}
	ctx := r.Context()
	key := store.Key{Namespace: ns, Name: name}
	var value any
	switch resource + "/" + verb {
	case "virtualmachines/start":
		var o struct {
			Paused bool     `json:"paused,omitempty"`
			DryRun []string `json:"dryRun,omitempty"`
		}
		if err = decode(&o); err == nil && len(o.DryRun) == 0 {
			err = controller.Start(ctx, s.opts.Store, key, controller.StartOptions{Paused: o.Paused})
		}
	case "virtualmachines/stop":
		var o struct {
			GracePeriod *int64   `json:"gracePeriod,omitempty"`
			DryRun      []string `json:"dryRun,omitempty"`
		}
		if err = decode(&o); err == nil && len(o.DryRun) == 0 {
			err = controller.Stop(ctx, s.opts.Store, key, controller.StopOptions{GracePeriod: o.GracePeriod})
		}
	case "virtualmachines/restart":
		var o struct {
			GracePeriodSeconds *int64   `json:"gracePeriodSeconds,omitempty"`
			DryRun             []string `json:"dryRun,omitempty"`
		}
		if err = decode(&o); err == nil && len(o.DryRun) == 0 {
			err = controller.Restart(ctx, s.opts.Store, key, controller.RestartOptions{GracePeriodSeconds: o.GracePeriodSeconds})
		}
	case "virtualmachines/migrate":
		var o struct {
			AddedNodeSelector map[string]string `json:"addedNodeSelector,omitempty"`
			DryRun            []string          `json:"dryRun,omitempty"`
		}
		if err = decode(&o); err == nil && len(o.DryRun) == 0 {
			err = s.migrateVM(ctx, key, controller.MigrateOptions{AddedNodeSelector: o.AddedNodeSelector})
		}
	case "virtualmachines/softreboot", "virtualmachineinstances/softreboot":
		var o dryRunOptions
		if err = decode(&o); err == nil && len(o.DryRun) == 0 {
			err = controller.SoftReboot(ctx, s.opts.Store, key, controller.SoftRebootOptions{})
		}
	case "virtualmachineinstances/pause":
		var o dryRunOptions
		if err = decode(&o); err == nil && len(o.DryRun) == 0 {
			err = controller.Pause(ctx, s.opts.Store, key)
		}
	case "virtualmachineinstances/unpause":
		var o dryRunOptions
		if err = decode(&o); err == nil && len(o.DryRun) == 0 {
			err = controller.Unpause(ctx, s.opts.Store, key)
		}
	case "virtualmachineinstances/guestosinfo", "virtualmachineinstances/userlist", "virtualmachineinstances/filesystemlist":
		value, err = s.guestInfo(ctx, verb, key)
	case "virtualmachines/expand-spec":
		value, err = s.expandStoredVM(r, key)
	}
	if err == nil && sr.verb == "update" && dryRunBody(body) {
		// A dry run changes nothing but still answers NotFound for an
		// object that is not there.
		err = s.exists(ctx, resource, key)
	}
	if err != nil {
		s.writeError(w, r, actionError(gr, name, err))
		return
	}
	if value != nil {
		s.writeJSONValue(w, http.StatusOK, value)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// migrateVM migrates the instance of the VM at key: NotFound when the VM
// is missing, Conflict when it has no instance (it is not running), as
// KubeVirt answers.
func (s *Server) migrateVM(ctx context.Context, key store.Key, opts controller.MigrateOptions) error {
	if err := s.exists(ctx, "virtualmachines", key); err != nil {
		return err
	}
	_, err := controller.Migrate(ctx, s.opts.Store, key, opts)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: VM is not running", controller.ErrConflictingAction)
	}
	return err
}

// dryRunOptions is the dry-run field every action's options carry.
type dryRunOptions struct {
	DryRun []string `json:"dryRun,omitempty"`
}

// dryRunBody reports whether an action's options body asks for a dry run.
func dryRunBody(body []byte) bool {
	var o dryRunOptions
	return len(body) > 0 && json.Unmarshal(body, &o) == nil && len(o.DryRun) > 0
}

// exists answers NotFound when the VM or VMI an action names is missing.
func (s *Server) exists(ctx context.Context, resource string, key store.Key) error {
	gvr := schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: resource}
	res, ok := s.resources[gvr]
	if !ok {
		return apierrors.NewNotFound(gvr.GroupResource(), key.Name)
	}
	return s.opts.Store.Get(ctx, key, res.newObject())
}

// errNoGuestInfoSource: the server has no GuestInfo to ask.
var errNoGuestInfoSource = errors.New("guest information is not available from this API server")

func (s *Server) guestInfo(ctx context.Context, verb string, key store.Key) (any, error) {
	if s.opts.GuestInfo == nil && s.nodes != nil {
		return s.nodeGuestInfo(ctx, verb, key)
	}
	if s.opts.GuestInfo == nil {
		return nil, fmt.Errorf("%w: %w", controller.ErrConflictingAction, errNoGuestInfoSource)
	}
	var v any
	var err error
	switch verb {
	case "guestosinfo":
		v, err = s.opts.GuestInfo.GuestOSInfo(ctx, key.Namespace, key.Name)
	case "userlist":
		v, err = s.opts.GuestInfo.UserList(ctx, key.Namespace, key.Name)
	default:
		v, err = s.opts.GuestInfo.FilesystemList(ctx, key.Namespace, key.Name)
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: %w", controller.ErrConflictingAction, err)
	}
	return v, err
}

// actionError maps the controller actions' errors to KubeVirt's statuses.
func actionError(gr schema.GroupResource, name string, err error) error {
	var se apierrors.APIStatus
	switch {
	case errors.As(err, &se):
		return err
	case errors.Is(err, store.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, controller.ErrConflictingAction), errors.Is(err, store.ErrConflict):
		return apierrors.NewConflict(gr, name, err)
	case errors.Is(err, controller.ErrActionForbidden):
		return apierrors.NewForbidden(gr, name, err)
	case errors.Is(err, controller.ErrInvalidAction):
		return apierrors.NewBadRequest(err.Error())
	}
	return apierrors.NewInternalError(err)
}
