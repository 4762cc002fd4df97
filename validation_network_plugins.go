package virtkit

import "k8s.io/apimachinery/pkg/util/validation/field"

// bindingPlugin checks an interface's passtBinding and binding plugin as
// KubeVirt's network admitter does. Whether the plugin is registered in
// the KubeVirt configuration is not an admission matter in KubeVirt
// either: the VMI fails to start when it is not. The PasstBinding gate
// is checked with the other gates (AdmitFeatureGates).
func (v *vmiValidator) bindingPlugin(iface *Interface, nw *Network, p *field.Path) {
	if iface.InterfaceBindingMethod.PasstBinding != nil && nw != nil && nw.Pod == nil {
		v.add(field.Invalid(p.Child("name"), iface.Name, "PasstBinding interface only implemented with pod network"))
	}
	if b := iface.Binding; b != nil && b.Name == "" {
		v.add(field.Required(p.Child("binding", "name"), "the name of a network binding plugin registered in the KubeVirt configuration"))
	}
}
