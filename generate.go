// +kubebuilder:object:generate=true

package virtkit

// DeepCopy methods (zz_generated.deepcopy.go) come from controller-gen's
// object generator. The tool runs by version so it needs no entry in go.mod.
//go:generate go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0 object paths=.
