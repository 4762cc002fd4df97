package subresources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/store"
)

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

// serveAction answers /apis/subresources.kubevirt.io/v1/version,
// .../namespaces/NS/expand-vm-spec and .../namespaces/NS/
// {virtualmachines,virtualmachineinstances}/NAME/VERB.
func (h *Handler) serveAction(w http.ResponseWriter, r *http.Request, u user.Info) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) == 4 && parts[3] == "version":
		if r.Method != http.MethodGet {
			h.writeError(w, r, apierrors.NewMethodNotSupported(schema.GroupResource{Group: GroupName, Resource: "version"}, r.Method))
			return
		}
		h.writeJSON(w, http.StatusOK, h.version())
		return
	case len(parts) == 6 && parts[3] == "namespaces" && (parts[5] == "expand-vm-spec" || parts[5] == "expand-spec"):
		h.serveExpandSpec(w, r, u, parts[4], parts[5])
		return
	}
	// apis subresources.kubevirt.io v1 namespaces NS RESOURCE NAME VERB
	if len(parts) != 8 || parts[3] != "namespaces" {
		h.writeError(w, r, apierrors.NewNotFound(schema.GroupResource{Group: GroupName}, r.URL.Path))
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
	gr := schema.GroupResource{Group: GroupName, Resource: resource}
	if sr == nil {
		h.writeError(w, r, apierrors.NewNotFound(gr, name+"/"+verb))
		return
	}
	if want := map[string]string{"update": http.MethodPut, "get": http.MethodGet}[sr.verb]; r.Method != want {
		h.writeError(w, r, apierrors.NewMethodNotSupported(gr, r.Method))
		return
	}
	if err := h.authorize(r, u, sr.verb, ns, resource, verb, name); err != nil {
		h.writeError(w, r, err)
		return
	}
	body, err := h.readBody(r)
	if err != nil {
		h.writeError(w, r, err)
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
			err = actions.Start(ctx, h.opts.Store, key, actions.StartOptions{Paused: o.Paused})
		}
	case "virtualmachines/stop":
		var o struct {
			GracePeriod *int64   `json:"gracePeriod,omitempty"`
			DryRun      []string `json:"dryRun,omitempty"`
		}
		if err = decode(&o); err == nil && len(o.DryRun) == 0 {
			err = actions.Stop(ctx, h.opts.Store, key, actions.StopOptions{GracePeriod: o.GracePeriod})
		}
	case "virtualmachines/restart":
		var o struct {
			GracePeriodSeconds *int64   `json:"gracePeriodSeconds,omitempty"`
			DryRun             []string `json:"dryRun,omitempty"`
		}
		if err = decode(&o); err == nil && len(o.DryRun) == 0 {
			err = actions.Restart(ctx, h.opts.Store, key, actions.RestartOptions{GracePeriodSeconds: o.GracePeriodSeconds})
		}
	case "virtualmachines/migrate":
		var o struct {
			AddedNodeSelector map[string]string `json:"addedNodeSelector,omitempty"`
			DryRun            []string          `json:"dryRun,omitempty"`
		}
		if err = decode(&o); err == nil && len(o.DryRun) == 0 {
			err = h.migrateVM(ctx, key, actions.MigrateOptions{AddedNodeSelector: o.AddedNodeSelector})
		}
	case "virtualmachines/softreboot", "virtualmachineinstances/softreboot":
		var o dryRunOptions
		if err = decode(&o); err == nil && len(o.DryRun) == 0 {
			err = actions.SoftReboot(ctx, h.opts.Store, key, actions.SoftRebootOptions{})
		}
	case "virtualmachineinstances/pause":
		var o dryRunOptions
		if err = decode(&o); err == nil && len(o.DryRun) == 0 {
			err = actions.Pause(ctx, h.opts.Store, key)
		}
	case "virtualmachineinstances/unpause":
		var o dryRunOptions
		if err = decode(&o); err == nil && len(o.DryRun) == 0 {
			err = actions.Unpause(ctx, h.opts.Store, key)
		}
	case "virtualmachineinstances/guestosinfo", "virtualmachineinstances/userlist", "virtualmachineinstances/filesystemlist":
		value, err = h.guestInfo(ctx, verb, key)
	case "virtualmachines/addvolume", "virtualmachineinstances/addvolume":
		var o virtkit.AddVolumeOptions
		if len(body) == 0 {
			err = apierrors.NewBadRequest("Request with no body, a new name is expected as the request body")
		} else if err = decode(&o); err == nil {
			if resource == "virtualmachines" {
				err = actions.AddVMVolume(ctx, h.opts.Store, key, &o)
			} else {
				err = actions.AddVMIVolume(ctx, h.opts.Store, key, &o)
			}
		}
	case "virtualmachines/removevolume", "virtualmachineinstances/removevolume":
		var o virtkit.RemoveVolumeOptions
		if len(body) == 0 {
			err = apierrors.NewBadRequest("Request with no body, a new name is expected as the request body")
		} else if err = decode(&o); err == nil {
			if resource == "virtualmachines" {
				err = actions.RemoveVMVolume(ctx, h.opts.Store, key, &o)
			} else {
				err = actions.RemoveVMIVolume(ctx, h.opts.Store, key, &o)
			}
		}
	case "virtualmachines/expand-spec":
		value, err = h.expandStoredVM(r, key)
	}
	if err == nil && sr.verb == "update" && dryRunBody(body) && !strings.HasSuffix(verb, "volume") {
		// A dry run changes nothing but still answers NotFound for an
		// object that is not there.
		err = h.exists(ctx, resource, key)
	}
	if err != nil {
		h.writeError(w, r, actionError(gr, name, err))
		return
	}
	if value != nil {
		h.writeJSON(w, http.StatusOK, value)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// migrateVM migrates the instance of the VM at key: NotFound when the VM
// is missing, Conflict when it has no instance (it is not running), as
// KubeVirt answers.
func (h *Handler) migrateVM(ctx context.Context, key store.Key, opts actions.MigrateOptions) error {
	if err := h.exists(ctx, "virtualmachines", key); err != nil {
		return err
	}
	_, err := actions.Migrate(ctx, h.opts.Store, key, opts)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: VM is not running", actions.ErrConflictingAction)
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
func (h *Handler) exists(ctx context.Context, resource string, key store.Key) error {
	var obj virtkit.Object
	switch resource {
	case "virtualmachines":
		obj = &virtkit.VirtualMachine{}
	case "virtualmachineinstances":
		obj = &virtkit.VirtualMachineInstance{}
	default:
		return apierrors.NewNotFound(schema.GroupResource{Group: virtkit.SchemeGroupVersion.Group, Resource: resource}, key.Name)
	}
	return h.opts.Store.Get(ctx, key, obj)
}

// errNoGuestInfoSource: the server has no GuestInfo to ask.
var errNoGuestInfoSource = errors.New("guest information is not available from this API server")

func (h *Handler) guestInfo(ctx context.Context, verb string, key store.Key) (any, error) {
	// Answer a guest that does not reply in time with 504 before the
	// server's request timeout does: a handler still writing when that
	// timeout fires gets its connection cut (the client sees EOF).
	if dl, ok := ctx.Deadline(); ok {
		margin := min(time.Until(dl)/10, guestInfoMargin)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-margin))
		defer cancel()
	}
	v, err := h.askGuest(ctx, verb, key)
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		return nil, apierrors.NewTimeoutError(fmt.Sprintf("the guest agent of %s did not answer in time", key), 0)
	}
	return v, err
}

// guestInfoMargin is the most time a guest-information request leaves
// between its own deadline and the server's request timeout.
const guestInfoMargin = 500 * time.Millisecond

func (h *Handler) askGuest(ctx context.Context, verb string, key store.Key) (any, error) {
	if h.opts.GuestInfo == nil && h.nodes != nil {
		return h.nodeGuestInfo(ctx, verb, key)
	}
	if h.opts.GuestInfo == nil {
		return nil, fmt.Errorf("%w: %w", actions.ErrConflictingAction, errNoGuestInfoSource)
	}
	var v any
	var err error
	switch verb {
	case "guestosinfo":
		v, err = h.opts.GuestInfo.GuestOSInfo(ctx, key.Namespace, key.Name)
	case "userlist":
		v, err = h.opts.GuestInfo.UserList(ctx, key.Namespace, key.Name)
	default:
		v, err = h.opts.GuestInfo.FilesystemList(ctx, key.Namespace, key.Name)
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: %w", actions.ErrConflictingAction, err)
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
	case errors.As(err, new(*actions.InvalidError)):
		kind, errs := actions.FieldErrors(err)
		return apierrors.NewInvalid(virtkit.SchemeGroupVersion.WithKind(kind).GroupKind(), name, errs)
	case errors.Is(err, actions.ErrConflictingAction), errors.Is(err, store.ErrConflict):
		return apierrors.NewConflict(gr, name, err)
	case errors.Is(err, actions.ErrActionForbidden):
		return apierrors.NewForbidden(gr, name, err)
	case errors.Is(err, actions.ErrInvalidAction):
		return apierrors.NewBadRequest(err.Error())
	}
	return apierrors.NewInternalError(err)
}
