package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/store"
)

// patchAttempts bounds the retries of a patch that does not name a
// resourceVersion and loses a race with another writer.
const patchAttempts = 5

func (s *Server) patch(w http.ResponseWriter, r *http.Request, info *requestInfo) {
	ct := r.Header.Get("Content-Type")
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	var apply func(cur, patch []byte) ([]byte, error)
	switch types.PatchType(strings.TrimSpace(ct)) {
	case types.MergePatchType:
		apply = jsonpatch.MergePatch
	case types.JSONPatchType:
		apply = func(cur, patch []byte) ([]byte, error) {
			return applyJSONPatch(cur, patch, s.opts.MaxRequestBytes)
		}
	case types.StrategicMergePatchType:
		s.writeError(w, r, strategicMergeError(info))
		return
	default:
		s.writeError(w, r, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch",
			info.res.groupResource(), info.name,
			fmt.Sprintf("patch type %q not supported: use %s or %s", ct,
				types.MergePatchType, types.JSONPatchType), 0, false))
		return
	}
	body, err := s.readBody(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var out virtkit.Object
	for attempt := 0; ; attempt++ {
		out, err = s.patchOnce(r, info, apply, body)
		if err == nil || !errors.Is(err, errRetryPatch) || attempt == patchAttempts-1 {
			break
		}
	}
	if errors.Is(err, errRetryPatch) {
		err = apierrors.NewConflict(info.res.groupResource(), info.name, fmt.Errorf("gave up after %d attempts", patchAttempts))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.respondObject(w, r, http.StatusOK, info.res, out)
}

var errRetryPatch = errors.New("patch lost a race; retry")

func (s *Server) patchOnce(r *http.Request, info *requestInfo, apply func(cur, patch []byte) ([]byte, error), patch []byte) (virtkit.Object, error) {
	cur := info.res.newObject()
	if err := s.opts.Store.Get(r.Context(), s.key(info), cur); err != nil {
		return nil, storeError(info.res, info.name, err)
	}
	curJSON, err := s.encodeRaw(cur)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	patched, err := apply(curJSON.Raw, patch)
	if errors.Is(err, errPatchTooLarge) {
		return nil, apierrors.NewRequestEntityTooLargeError(err.Error())
	}
	if err != nil {
		return nil, apierrors.NewBadRequest("patch: " + err.Error())
	}
	obj, err := s.decodeBody(info, patched)
	if err != nil {
		return nil, err
	}
	pinned := obj.GetResourceVersion() != cur.GetResourceVersion()
	if obj.GetResourceVersion() == "" {
		obj.SetResourceVersion(cur.GetResourceVersion())
	}
	out, err := s.write(r, info, obj, cur)
	if err != nil && !pinned && apierrors.IsConflict(err) {
		return nil, errRetryPatch
	}
	return out, err
}

// admitUpdate defaults the user's object (a VMI keeps the firmware UUID it
// was given), validates it and runs update admission against the stored
// object; the result carries the stored status.
func (s *Server) admitUpdate(ctx context.Context, info *requestInfo, given, cur virtkit.Object) (virtkit.Object, error) {
	next := given.DeepCopyObject().(virtkit.Object)
	if err := s.admitInstancetype(ctx, info, next, controller.InferInstancetype); err != nil {
		return nil, err
	}
	opts := s.opts.Defaults
	opts.NewUUID = nil
	if vmi, ok := cur.(*virtkit.VirtualMachineInstance); ok {
		if fw := vmi.Spec.Domain.Firmware; fw != nil && fw.UUID != "" {
			uuid := fw.UUID
			opts.NewUUID = func() types.UID { return uuid }
		}
	}
	opts.SetDefaults(next)
	errs := virtkit.Validate(next)
	if len(errs) == 0 {
		errs = virtkit.AdmitUpdate(next, cur)
	}
	if len(errs) > 0 {
		return nil, invalid(info.res, info.name, errs)
	}
	if err := s.admitInstancetype(ctx, info, next, controller.AdmitInstancetype); err != nil {
		return nil, err
	}
	return next, nil
}

// admitInstancetype runs one of the instance type steps of VM admission
// (inferFromVolume's mutation, or the check against the instance type and
// preference a VM names), as cluster.Apply does: both read the store.
func (s *Server) admitInstancetype(ctx context.Context, info *requestInfo, obj virtkit.Object,
	step func(context.Context, store.Store, virtkit.Object) (field.ErrorList, error)) error {
	errs, err := step(ctx, s.opts.Store, obj)
	if err != nil {
		return storeError(info.res, obj.GetName(), err)
	}
	if len(errs) > 0 {
		return invalid(info.res, obj.GetName(), errs)
	}
	return nil
}

func fieldRequiredRV() field.ErrorList {
	return field.ErrorList{field.Invalid(field.NewPath("metadata", "resourceVersion"), "",
		"must be specified for an update")}
}
