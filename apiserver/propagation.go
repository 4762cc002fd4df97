package apiserver

import (
	"encoding/json"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// propagationPolicy reads a delete's propagation policy from its
// DeleteOptions body or the propagationPolicy and orphanDependents query
// parameters (the body wins), as the Kubernetes API server does: the
// deprecated orphanDependents maps to Orphan (true) or Background (false),
// and setting both is invalid. nil leaves the store's default (Background).
func propagationPolicy(r *http.Request, body []byte, opts *metav1.DeleteOptions) (*metav1.DeletionPropagation, error) {
	q := r.URL.Query()
	if opts.PropagationPolicy == nil && q.Has("propagationPolicy") {
		p := metav1.DeletionPropagation(q.Get("propagationPolicy"))
		opts.PropagationPolicy = &p
	}
	// The deprecated field, read on its own.
	var legacy struct {
		OrphanDependents *bool `json:"orphanDependents"`
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &legacy); err != nil {
			return nil, apierrors.NewBadRequest("DeleteOptions: " + err.Error())
		}
	}
	orphanDependents := legacy.OrphanDependents
	if orphanDependents == nil && q.Has("orphanDependents") {
		b, err := strconv.ParseBool(q.Get("orphanDependents"))
		if err != nil {
			return nil, apierrors.NewBadRequest("orphanDependents: " + strconv.Quote(q.Get("orphanDependents")) + " is not a boolean")
		}
		orphanDependents = &b
	}
	gk := schema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}
	switch {
	case opts.PropagationPolicy != nil && orphanDependents != nil:
		return nil, apierrors.NewInvalid(gk, "", field.ErrorList{field.Invalid(field.NewPath("propagationPolicy"), *opts.PropagationPolicy,
			"orphanDependents and propagationPolicy cannot both be set")})
	case orphanDependents != nil:
		p := metav1.DeletePropagationBackground
		if *orphanDependents {
			p = metav1.DeletePropagationOrphan
		}
		return &p, nil
	case opts.PropagationPolicy == nil:
		return nil, nil
	}
	switch p := *opts.PropagationPolicy; p {
	case metav1.DeletePropagationOrphan, metav1.DeletePropagationForeground, metav1.DeletePropagationBackground:
		return &p, nil
	default:
		return nil, apierrors.NewInvalid(gk, "", field.ErrorList{field.NotSupported(field.NewPath("propagationPolicy"), p,
			[]string{string(metav1.DeletePropagationForeground), string(metav1.DeletePropagationBackground), string(metav1.DeletePropagationOrphan)})})
	}
}
