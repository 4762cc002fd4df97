package subresources

import (
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"runtime/debug"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/store"
)

// versionInfo is KubeVirt's version.Info, what virtctl version prints
// as the server's version.
type versionInfo struct {
	GitVersion   string `json:"gitVersion"`
	GitCommit    string `json:"gitCommit"`
	GitTreeState string `json:"gitTreeState"`
	BuildDate    string `json:"buildDate"`
	GoVersion    string `json:"goVersion"`
	Compiler     string `json:"compiler"`
	Platform     string `json:"platform"`
}

// version answers /apis/subresources.kubevirt.io/v1/version from the build
// information of the running binary: the module's version when it was
// built as a dependency, else Options.Version, and the VCS revision, state
// and time when the build recorded them.
func (h *Handler) version() versionInfo {
	v := versionInfo{GitVersion: h.opts.Version, GitTreeState: "clean", GoVersion: runtime.Version(),
		Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	mod := bi.Main
	for _, d := range bi.Deps {
		if d.Path == "github.com/virtkit/virtkit" {
			mod = *d
		}
	}
	if mod.Version != "" && mod.Version != "(devel)" {
		v.GitVersion = mod.Version
	}
	for _, st := range bi.Settings {
		switch st.Key {
		case "vcs.revision":
			v.GitCommit = st.Value
		case "vcs.time":
			v.BuildDate = st.Value
		case "vcs.modified":
			if st.Value == "true" {
				v.GitTreeState = "dirty"
			}
		}
	}
	return v
}

// expandSpec returns vm with its instance type and preference expanded
// into its template, and its matchers dropped, as KubeVirt's expand-spec
// answers. A VM that names neither is returned as it is.
func (h *Handler) expandSpec(r *http.Request, vm *virtkit.VirtualMachine) (*virtkit.VirtualMachine, error) {
	gr := schema.GroupResource{Group: virtkit.SchemeGroupVersion.Group, Resource: "virtualmachines"}
	if vm.Spec.Instancetype == nil && vm.Spec.Preference == nil {
		return vm, nil
	}
	if vm.Spec.Template == nil {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: gr.Group, Kind: virtkit.KindVirtualMachine}, vm.Name,
			field.ErrorList{field.Required(field.NewPath("spec", "template"), "")})
	}
	it, pref, err := actions.InstancetypeSpecs(r.Context(), h.opts.Store, vm)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot expand instancetype to VM %s: %v", vm.Name, err))
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	out := vm.DeepCopy()
	if errs := virtkit.ApplyInstancetype(out.Spec.Template, it, pref, field.NewPath("spec", "template", "spec")); len(errs) > 0 {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot expand instancetype to VM %s: %v", vm.Name, errs.ToAggregate()))
	}
	out.Spec.Instancetype = nil
	out.Spec.Preference = nil
	out.APIVersion, out.Kind = virtkit.SchemeGroupVersion.String(), virtkit.KindVirtualMachine
	return out, nil
}

// serveExpandSpec answers PUT .../namespaces/NS/expand-vm-spec (KubeVirt's
// name; expand-spec is served too): the VM in the body, expanded. It is
// authorized as update on the resource the path names.
func (h *Handler) serveExpandSpec(w http.ResponseWriter, r *http.Request, u user.Info, ns, resource string) {
	gr := schema.GroupResource{Group: GroupName, Resource: resource}
	if r.Method != http.MethodPut {
		h.writeError(w, r, apierrors.NewMethodNotSupported(gr, r.Method))
		return
	}
	if err := h.authorize(r, u, "update", ns, resource, "", ""); err != nil {
		h.writeError(w, r, err)
		return
	}
	body, err := h.readBody(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	objs, err := virtkit.DecodeBytes(body)
	if err != nil || len(objs) != 1 {
		h.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("expand-spec: the body must hold one VirtualMachine: %v", err)))
		return
	}
	vm, ok := objs[0].(*virtkit.VirtualMachine)
	if !ok {
		h.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("expand-spec: the body holds a %T; want a VirtualMachine", objs[0])))
		return
	}
	switch vm.Namespace {
	case "":
		vm.Namespace = ns
	case ns:
	default:
		h.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("VM namespace %q must be empty or %q", vm.Namespace, ns)))
		return
	}
	out, err := h.expandSpec(r, vm)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	h.writeJSON(w, http.StatusOK, out)
}

// expandStoredVM answers GET .../virtualmachines/NAME/expand-spec.
func (h *Handler) expandStoredVM(r *http.Request, key store.Key) (any, error) {
	vm := &virtkit.VirtualMachine{}
	if err := h.opts.Store.Get(r.Context(), key, vm); err != nil {
		return nil, err
	}
	return h.expandSpec(r, vm)
}
