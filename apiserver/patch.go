package apiserver

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
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

func fieldRequiredRV() field.ErrorList {
	return field.ErrorList{field.Invalid(field.NewPath("metadata", "resourceVersion"), "",
		"must be specified for an update")}
}
