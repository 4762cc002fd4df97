// Package corev1 serves Kubernetes' legacy core group (/api/v1) on a
// generic API server (k8s.io/apiserver): the core kinds virtkit's objects
// reference or that kubectl and client-go expect of a cluster.
//
// [NewAPIGroupInfo] builds the group for
// GenericAPIServer.InstallLegacyAPIGroup("/api", &info):
//
//   - namespaces (with the status and finalize subresources), configmaps,
//     secrets and serviceaccounts are registry.Stores over a
//     generic.RESTOptionsGetter (apiserver/kubestorage over virtkit's
//     store), validated as kube-apiserver validates them: DNS-1123 names,
//     ConfigMap and Secret keys, data of at most 1 MiB, the keys a Secret's
//     type requires, immutable ConfigMaps and Secrets; a Secret's
//     stringData is merged into data and its type defaults to Opaque;
//   - nodes are core v1 views of virtkit's Nodes (virtkit.io/v1alpha1):
//     conditions, capacity, allocatable, a Hostname address and nodeInfo
//     come from the agent's status; spec.unschedulable, taints, labels and
//     annotations can be updated and patched, and are written to virtkit's
//     Node, so kubectl cordon and uncordon reach virtkit's scheduler
//     (uncordon also removes virtkit's kubevirt.io/drain taint); any other
//     change is refused naming the field;
//   - pods are a read-only view of the VMIs: virtkit runs no pods, and
//     each VMI a node runs (or starts, or stops after a delete) is shown as
//     the virt-launcher pod KubeVirt would run (virt-launcher-<vmi>-<five
//     characters derived from the VMI's uid and the node>, labels
//     kubevirt.io=virt-launcher, kubevirt.io/created-by, vm.kubevirt.io/name
//     and the VMI's own, the VMI as controller, spec.nodeName, the phase
//     following the VMI's, one compute container), plus the target's pod
//     while a migration runs; watches are translated from the VMIs'.
//     pods/eviction (a policy/v1 Eviction, as kubectl drain posts it)
//     applies the VMI's eviction strategy as KubeVirt's eviction admission
//     does: LiveMigrate, LiveMigrateIfPossible on a migratable VMI and
//     External set status.evacuationNodeName and answer 429, which kubectl
//     retries while the control plane migrates the VMI; a LiveMigrate VMI
//     that cannot migrate is refused with 429; None deletes the VMI (201).
//     So kubectl drain evacuates a node as it does a KubeVirt node;
//   - persistentvolumeclaims are views of the claims of the DataVolumes
//     (one per DataVolume, of its name, as CDI creates them; Bound once the
//     DataVolume's Bound condition is True; with CDI's
//     cdi.kubevirt.io/storage.pod.phase and pod.ready annotations following
//     the DataVolume's phase, and storage.upload.target on upload
//     DataVolumes). Creating a claim annotated
//     cdi.kubevirt.io/storage.upload.target (virtctl image-upload pvc)
//     creates an upload DataVolume of its name; other claims are refused
//     (422 naming the annotation), and updates and deletes are 405;
//   - events are a read-only core v1 view of the events.k8s.io Events,
//     selectable by involvedObject.*, reason, type, source and
//     reportingComponent as in kube-apiserver.
//
// Views serve get, list and watch with label and field selectors; their
// lists are one page and their resourceVersions are the store's. A watch
// from a resourceVersion (an informer's, after its list or a cut
// connection) reports every change since, as a watch of stored objects
// does: a pod its VMI no longer derives, and an object that stopped
// matching the selector (a node cordoned, watched with
// spec.unschedulable=false; a claim bound, watched with
// status.phase=Pending), are Deleted; one that started matching is
// Added. What the client held at that version comes from a history of the
// latest 4096 changes of the view's source objects, which begins with the
// view's first list or watch of pods or with a selector; a watch that
// needs more is answered 410 Gone, and the client relists.
//
// # Namespaces
//
// A namespace is created Active with Kubernetes' "kubernetes" finalizer in
// spec.finalizers, mirrored in metadata.finalizers (the store's graceful
// deletion keys on it). Deleting a namespace marks it; the namespace
// controller (controller.NamespaceReconciler, run by the embedded
// cluster) sets it Terminating, deletes its content of every namespaced
// kind and removes the finalizer, and the namespace goes. That an object's
// namespace exists is checked by the library's NamespaceLifecycle
// admission plugin, which lists and watches namespaces through the
// server's loopback client: this group serves them. Objects written to
// the store directly (cluster.Apply) are not checked.
//
// The group uses its own scheme ([NewScheme]): the core v1 types, also
// registered as their own internal version (the library converts through
// an internal version; these types have none), and kube-apiserver's field
// selectors.
package corev1
