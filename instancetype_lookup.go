package virtkit

// InstancetypeSpecOf is the spec of a namespaced or cluster instance type;
// nil for any other object.
func InstancetypeSpecOf(obj Object) *VirtualMachineInstancetypeSpec {
	switch t := obj.(type) {
	case *VirtualMachineInstancetype:
		return &t.Spec
	case *VirtualMachineClusterInstancetype:
		return &t.Spec
	}
	return nil
}

// PreferenceSpecOf is the spec of a namespaced or cluster preference; nil
// for any other object.
func PreferenceSpecOf(obj Object) *VirtualMachinePreferenceSpec {
	switch t := obj.(type) {
	case *VirtualMachinePreference:
		return &t.Spec
	case *VirtualMachineClusterPreference:
		return &t.Spec
	}
	return nil
}
