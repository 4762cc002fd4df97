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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// writeObject encodes obj with the server's JSON serializer.
func (s *Server) writeObject(w http.ResponseWriter, _ *http.Request, code int, obj runtime.Object) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if err := s.codec.Encode(obj, w); err != nil {
		s.log.Debug("write response", "err", err)
	}
}

func (s *Server) writeJSONValue(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError writes err as a metav1.Status: API errors as they are, store
// errors mapped to their reasons, anything else as InternalError.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	st := statusOf(err)
	if st.Code >= 500 {
		s.log.Warn("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	s.writeObject(w, r, int(st.Code), &st)
}

func statusOf(err error) metav1.Status {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return se.Status()
	}
	return apierrors.NewInternalError(err).Status()
}

// storeError maps a store error for res/name to an API error.
func storeError(res *resource, name string, err error) error {
	gr := res.groupResource()
	var se apierrors.APIStatus
	switch {
	case errors.As(err, &se):
		return err
	case errors.Is(err, store.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, store.ErrAlreadyExists):
		return apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, store.ErrConflict):
		return apierrors.NewConflict(gr, name, err)
	case errors.Is(err, store.ErrExpired):
		return apierrors.NewResourceExpired(err.Error())
	case errors.Is(err, store.ErrInvalid):
		return apierrors.NewInvalid(res.gvk.GroupKind(), name, field.ErrorList{field.Invalid(nil, nil, err.Error())})
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return apierrors.NewTimeoutError(err.Error(), 1)
	}
	return apierrors.NewInternalError(err)
}

// invalid turns field errors into an Invalid status naming each path.
func invalid(res *resource, name string, errs field.ErrorList) error {
	return apierrors.NewInvalid(res.gvk.GroupKind(), name, errs)
}

// decodeError turns what virtkit.Decode reports into an Invalid status
// whose causes carry the field paths.
func decodeError(res *resource, name string, err error) error {
	var errs field.ErrorList
	for _, e := range flatten(err) {
		var de *virtkit.DecodeError
		if errors.As(e, &de) {
			msg := de.Err.Error()
			if de.Detail != "" {
				msg += ": " + de.Detail
			}
			var p *field.Path
			if de.Path != "" {
				p = field.NewPath(de.Path)
			}
			if errors.Is(de.Err, virtkit.ErrUnknownField) {
				errs = append(errs, &field.Error{Type: field.ErrorTypeNotSupported, Field: de.Path, BadValue: "", Detail: msg})
				continue
			}
			errs = append(errs, field.Invalid(p, "", msg))
			continue
		}
		errs = append(errs, field.Invalid(nil, "", e.Error()))
	}
	return invalid(res, name, errs)
}

func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// wantsTable reports whether the client asked for a meta.k8s.io Table.
func wantsTable(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "as=Table")
}

// wantsMetadata reports whether the client asked for PartialObjectMetadata.
func wantsMetadata(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadata")
}

func (s *Server) encodeRaw(obj runtime.Object) (runtime.RawExtension, error) {
	b, err := runtime.Encode(s.codec, obj)
	if err != nil {
		return runtime.RawExtension{}, fmt.Errorf("encode %T: %w", obj, err)
	}
	return runtime.RawExtension{Raw: b}, nil
}
