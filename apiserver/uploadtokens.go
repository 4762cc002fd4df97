package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/endpoints"
	genericapiserver "k8s.io/apiserver/pkg/server"
)

// UploadGroupName is CDI's upload API group, whose uploadtokenrequests
// resource hands out upload tokens (virtctl image-upload).
const UploadGroupName = "upload.cdi.kubevirt.io"

// UploadGroupVersion is the version of UploadGroupName served.
var UploadGroupVersion = schema.GroupVersion{Group: UploadGroupName, Version: "v1beta1"}

// UploadTokenIssuer issues the token an upload to claim namespace/name
// presents to the upload proxy (cdi/upload.Tokens does).
type UploadTokenIssuer interface {
	Issue(namespace, name string) (string, error)
}

// UploadTokenRequest is CDI's UploadTokenRequest
// (upload.cdi.kubevirt.io/v1beta1): spec.pvcName asks for a token,
// status.token is the answer.
type UploadTokenRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              UploadTokenRequestSpec   `json:"spec"`
	Status            UploadTokenRequestStatus `json:"status,omitempty"`
}

// UploadTokenRequestSpec names the claim to upload to.
type UploadTokenRequestSpec struct {
	PvcName string `json:"pvcName"`
}

// UploadTokenRequestStatus holds the token.
type UploadTokenRequestStatus struct {
	Token string `json:"token,omitempty"`
}

// maxUploadTokenRequestBytes bounds a request body.
const maxUploadTokenRequestBytes = 64 << 10

// uploadTokenHandler serves uploadtokenrequests (create only) and the
// group's discovery. The filter chain has authenticated and authorized the
// request as "create uploadtokenrequests" in its namespace.
type uploadTokenHandler struct {
	issuer UploadTokenIssuer
}

func uploadResources() *metav1.APIResourceList {
	return &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: UploadGroupVersion.String(),
		APIResources: []metav1.APIResource{{Name: "uploadtokenrequests", SingularName: "uploadtokenrequest", Namespaced: true,
			Kind: "UploadTokenRequest", Verbs: metav1.Verbs{"create"}}},
	}
}

func uploadGroup() metav1.APIGroup {
	v := metav1.GroupVersionForDiscovery{GroupVersion: UploadGroupVersion.String(), Version: UploadGroupVersion.Version}
	return metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: UploadGroupName,
		Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v}
}

// installUploadTokens mounts upload.cdi.kubevirt.io when the server has an
// issuer.
func installUploadTokens(s *genericapiserver.GenericAPIServer, issuer UploadTokenIssuer) error {
	if issuer == nil {
		return nil
	}
	h := &uploadTokenHandler{issuer: issuer}
	prefix := "/apis/" + UploadGroupName
	s.Handler.NonGoRestfulMux.Handle(prefix, h)
	s.Handler.NonGoRestfulMux.UnlistedHandlePrefix(prefix+"/", h)
	s.DiscoveryGroupManager.AddGroup(uploadGroup())
	res, err := endpoints.ConvertGroupVersionIntoToDiscovery(uploadResources().APIResources)
	if err != nil {
		return err
	}
	s.AggregatedDiscoveryGroupManager.AddGroupVersion(UploadGroupName, apidiscoveryv2.APIVersionDiscovery{
		Version: UploadGroupVersion.Version, Resources: res, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent})
	return nil
}

func (h *uploadTokenHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	gr := schema.GroupResource{Group: UploadGroupName, Resource: "uploadtokenrequests"}
	p := strings.TrimSuffix(r.URL.Path, "/")
	prefix := "/apis/" + UploadGroupName
	switch p {
	case prefix:
		if r.Method != http.MethodGet {
			writeStatus(w, apierrors.NewMethodNotSupported(gr, r.Method))
			return
		}
		g := uploadGroup()
		writeJSONObject(w, http.StatusOK, &g)
		return
	case prefix + "/" + UploadGroupVersion.Version:
		if r.Method != http.MethodGet {
			writeStatus(w, apierrors.NewMethodNotSupported(gr, r.Method))
			return
		}
		writeJSONObject(w, http.StatusOK, uploadResources())
		return
	}
	// /apis/upload.cdi.kubevirt.io/v1beta1/namespaces/NS/uploadtokenrequests[/NAME]
	parts := strings.Split(strings.TrimPrefix(p, prefix+"/"+UploadGroupVersion.Version+"/"), "/")
	if len(parts) < 3 || parts[0] != "namespaces" || parts[2] != gr.Resource || len(parts) > 4 {
		writeStatus(w, apierrors.NewNotFound(gr, ""))
		return
	}
	ns := parts[1]
	if len(parts) == 4 || r.Method != http.MethodPost {
		writeStatus(w, apierrors.NewMethodNotSupported(gr, r.Method))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxUploadTokenRequestBytes+1))
	if err != nil {
		writeStatus(w, apierrors.NewBadRequest("reading the request: "+err.Error()))
		return
	}
	if len(body) > maxUploadTokenRequestBytes {
		writeStatus(w, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d bytes", maxUploadTokenRequestBytes)))
		return
	}
	var req UploadTokenRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeStatus(w, apierrors.NewBadRequest("decoding the UploadTokenRequest: "+err.Error()))
		return
	}
	var errs field.ErrorList
	if gv := req.APIVersion; gv != "" && gv != UploadGroupVersion.String() {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), gv, "want "+UploadGroupVersion.String()))
	}
	if req.Kind != "" && req.Kind != "UploadTokenRequest" {
		errs = append(errs, field.Invalid(field.NewPath("kind"), req.Kind, "want UploadTokenRequest"))
	}
	if req.Namespace != "" && req.Namespace != ns {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "namespace"), req.Namespace, "does not match the namespace of the request"))
	}
	sp := field.NewPath("spec", "pvcName")
	if req.Spec.PvcName == "" {
		errs = append(errs, field.Required(sp, "the claim to upload to"))
	} else {
		for _, m := range validation.IsDNS1123Subdomain(req.Spec.PvcName) {
			errs = append(errs, field.Invalid(sp, req.Spec.PvcName, m))
		}
	}
	if len(errs) > 0 {
		writeStatus(w, apierrors.NewInvalid(schema.GroupKind{Group: UploadGroupName, Kind: "UploadTokenRequest"}, req.Name, errs))
		return
	}
	token, err := h.issuer.Issue(ns, req.Spec.PvcName)
	if err != nil {
		writeStatus(w, apierrors.NewInternalError(err))
		return
	}
	req.TypeMeta = metav1.TypeMeta{Kind: "UploadTokenRequest", APIVersion: UploadGroupVersion.String()}
	req.Namespace = ns
	req.Status.Token = token
	writeJSONObject(w, http.StatusOK, &req)
}

func writeStatus(w http.ResponseWriter, err error) {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		se = apierrors.NewInternalError(err)
	}
	st := se.Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	writeJSONObject(w, int(st.Code), &st)
}

func writeJSONObject(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}
