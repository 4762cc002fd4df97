package apiserver

import (
	"net/http"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/admission"
)

// admit runs the admission chain (the one cluster.Apply and `virtkit
// validate` run) on obj for op; old is the stored object of an update.
// Field errors become one Invalid status with a cause per field; a store
// that cannot be read, its status.
func (s *Server) admit(r *http.Request, info *requestInfo, op admission.Operation, obj, old virtkit.Object) error {
	a := admission.AttributesFor(op, obj, old)
	a.DryRun = dryRun(r)
	err := admission.New(admission.Options{Defaults: s.opts.Defaults, Lookup: s.opts.Store}).Admit(r.Context(), a)
	if err == nil {
		return nil
	}
	if errs := admission.FieldErrors(err); errs != nil {
		return invalid(info.res, obj.GetName(), errs)
	}
	return storeError(info.res, obj.GetName(), err)
}

// admitUpdate admits the user's object as an update of the stored one
// (a VMI keeps the firmware UUID it was given); the result is a defaulted
// copy of given.
func (s *Server) admitUpdate(r *http.Request, info *requestInfo, given, cur virtkit.Object) (virtkit.Object, error) {
	next := given.DeepCopyObject().(virtkit.Object)
	if err := s.admit(r, info, admission.Update, next, cur); err != nil {
		return nil, err
	}
	return next, nil
}
