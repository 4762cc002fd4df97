package subresources

import (
	"net/http"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints"
)

// subresource is one of virtctl's verbs.
type subresource struct {
	resource string // virtualmachines or virtualmachineinstances
	name     string
	verb     string // authorization verb: update (PUT) or get (GET)
}

// subresourceList are virtctl's verbs other than the streams, in
// discovery's order.
func subresourceList() []subresource {
	return []subresource{
		{"virtualmachines", "start", "update"},
		{"virtualmachines", "stop", "update"},
		{"virtualmachines", "restart", "update"},
		{"virtualmachines", "migrate", "update"},
		{"virtualmachines", "softreboot", "update"},
		{"virtualmachines", "expand-spec", "get"},
		{"virtualmachines", "addvolume", "update"},
		{"virtualmachines", "removevolume", "update"},
		{"virtualmachineinstances", "pause", "update"},
		{"virtualmachineinstances", "unpause", "update"},
		{"virtualmachineinstances", "softreboot", "update"},
		{"virtualmachineinstances", "guestosinfo", "get"},
		{"virtualmachineinstances", "userlist", "get"},
		{"virtualmachineinstances", "filesystemlist", "get"},
		{"virtualmachineinstances", "addvolume", "update"},
		{"virtualmachineinstances", "removevolume", "update"},
	}
}

// APIGroup is the discovery document of subresources.kubevirt.io, what
// /apis lists and /apis/subresources.kubevirt.io answers (a generic
// server's DiscoveryGroupManager.AddGroup takes it).
func APIGroup() metav1.APIGroup {
	v := metav1.GroupVersionForDiscovery{GroupVersion: SchemeGroupVersion.String(), Version: Version}
	return metav1.APIGroup{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
		Name:     GroupName, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v,
	}
}

// APIResourceList is the discovery document of subresources.kubevirt.io/v1:
// every subresource the Handler serves, with the verb it is authorized as
// (get or update).
func APIResourceList() *metav1.APIResourceList {
	out := &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: SchemeGroupVersion.String(),
	}
	add := func(name, kind, verb string) {
		out.APIResources = append(out.APIResources, metav1.APIResource{Name: name, Namespaced: true, Kind: kind, Verbs: metav1.Verbs{verb}})
	}
	for _, sr := range subresourceList() {
		kind := "VirtualMachine"
		if sr.resource == "virtualmachineinstances" {
			kind = "VirtualMachineInstance"
		}
		add(sr.resource+"/"+sr.name, kind, sr.verb)
	}
	for _, v := range []string{"console", "vnc", "portforward", "vnc/screenshot"} {
		add("virtualmachineinstances/"+v, "VirtualMachineInstance", "get")
	}
	add("virtualmachines/portforward", "VirtualMachine", "get")
	return out
}

// APIVersionDiscovery is APIResourceList in the form of aggregated
// discovery (apidiscovery.k8s.io/v2), what a generic server's
// AggregatedDiscoveryGroupManager.AddGroupVersion(GroupName, ...) takes.
func APIVersionDiscovery() (apidiscoveryv2.APIVersionDiscovery, error) {
	res, err := endpoints.ConvertGroupVersionIntoToDiscovery(APIResourceList().APIResources)
	if err != nil {
		return apidiscoveryv2.APIVersionDiscovery{}, err
	}
	return apidiscoveryv2.APIVersionDiscovery{Version: Version, Resources: res, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}, nil
}

// serveDiscovery answers /apis/subresources.kubevirt.io and
// /apis/subresources.kubevirt.io/VERSION; false if the path is neither.
func (h *Handler) serveDiscovery(w http.ResponseWriter, r *http.Request) bool {
	p := strings.TrimSuffix(r.URL.Path, "/")
	if p != groupPrefix && !(strings.HasPrefix(p, groupPrefix+"/") && strings.Count(p, "/") == 3) {
		return false
	}
	if r.Method != http.MethodGet {
		h.writeError(w, r, apierrors.NewMethodNotSupported(schema.GroupResource{Group: GroupName}, r.Method))
		return true
	}
	switch p {
	case groupPrefix:
		g := APIGroup()
		h.writeJSON(w, http.StatusOK, &g)
	case groupPrefix + "/" + Version:
		h.writeJSON(w, http.StatusOK, APIResourceList())
	default:
		h.writeError(w, r, apierrors.NewNotFound(schema.GroupResource{}, p))
	}
	return true
}
