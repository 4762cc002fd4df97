// Package admission is virtkit's one admission chain, in the shape of
// k8s.io/apiserver/pkg/admission: a request is described by [Attributes]
// (operation, kind, namespace, name, object, old object, user, dry run,
// subresource), mutating steps ([MutationInterface]) change the object,
// validating steps ([ValidationInterface]) judge it, and every step says
// which operations it handles.
//
// A [Chain] runs every mutating step in order, then every validating step
// in order, as the Kubernetes API server runs KubeVirt's mutating webhooks
// before its validating admitters. The field errors of the validating
// steps are gathered into one error that wraps [ErrInvalid] and keeps the
// field.ErrorList ([FieldErrors]), so a caller can answer 422 with one
// cause per field. A mutating step that fails stops the chain (there is no
// object left to validate), as does any error that is not a field error
// (a store that cannot be read). A validating step that implements
// [NeedsValid] is skipped once an earlier step found a problem: expanding
// an instance type into a template that is already invalid would only
// repeat the problem.
//
// [New] builds the chain every writer of objects uses (cluster.Apply, the
// API server's create, update and patch, and `virtkit validate`), in this
// order:
//
//  1. [InferInstancetype] (mutating): spec.instancetype and
//     spec.preference inferFromVolume are resolved from the volume's
//     DataVolume labels, as KubeVirt's VM mutator does.
//  2. [Defaults] (mutating): the object defaults of the cluster
//     (virtkit.DefaultOptions, with the eviction and VM rollout strategies
//     of its KubeVirt configuration); an update keeps the firmware UUID of
//     the stored VMI instead of drawing one. A VM's dataVolumeTemplates
//     get its preference's preferred storage class in step 1.
//  3. [Validate] (validating): virtkit.Validate, the object's own rules,
//     DataVolumes and a VM's dataVolumeTemplates included.
//  4. [Admit] (validating): virtkit.AdmitCreate or virtkit.AdmitUpdate
//     (reserved labels, immutable specs).
//  5. [CheckInstancetype] (validating, [NeedsValid]): the instance type and
//     preference a VM names must exist, and the template must not set
//     what they set.
//  6. [CheckRestore] (validating, [NeedsValid]): a new
//     VirtualMachineRestore's snapshot must exist and not have failed, and
//     an existing target VM must be stopped.
//  7. [FeatureGates] (validating, [NeedsValid]): a field whose KubeVirt
//     feature gate the cluster's configuration leaves off is refused at
//     its path with KubeVirt's message naming the gate; a VM's template
//     is checked as its instance type and preference expand it.
//
// The steps that read other objects (1, 5 and 6) take a [Lookup]: the store
// of a cluster, or for `virtkit validate` one filled from the given files
// and KubeVirt's common catalogue. The cluster's configuration (steps 2
// and 6) comes from a [ConfigSource]: by default the KubeVirt object
// kubevirt/kubevirt in the Lookup ([StoreConfig]), read for every request,
// or KubeVirt's defaults when there is no Lookup or no such object.
package admission
