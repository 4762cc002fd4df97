// Package apiserver serves a virtkit store over the Kubernetes REST
// protocol, so that kubectl, client-go (dynamic clients, shared informers)
// and other Kubernetes clients work against a virtkit control plane with
// KubeVirt's resource names and printer columns, without Kubernetes.
//
// Every kind the store holds is served under its group and version
// (kubevirt.io/v1 virtualmachines, virtualmachineinstances, ...;
// migrations.kubevirt.io/v1alpha1 migrationpolicies; cdi.kubevirt.io/v1beta1
// datavolumes; ...):
//
//   - discovery (aggregated and legacy) and OpenAPI v2 and v3 generated
//     from virtkit's Go types, so kubectl explain and server-side apply
//     (with managed fields and conflicts) work;
//   - get, list (resourceVersion, limit/continue, label selectors, field
//     selectors metadata.name, metadata.namespace and, on VMIs,
//     status.nodeName and status.phase), watch (resumable from a
//     resourceVersion, 410 Gone once the store's history no longer holds
//     it, bookmarks, sendInitialEvents as client-go's watch-list uses it),
//     create, update, patch (JSON merge, JSON, strategic merge and apply
//     patches), delete and deletecollection (with preconditions and
//     propagationPolicy; finalizers hold an object until removed), the
//     status subresource and the scale subresource (autoscaling/v1 Scale)
//     of VirtualMachineInstanceReplicaSets;
//   - meta.k8s.io Table responses (kubectl get) with KubeVirt's and CDI's
//     printer columns (package printers, which the CLI shares), and
//     PartialObjectMetadata; discovery's names, short names and categories
//     are virtkit.NamesOf's;
//   - the core v1 group (package corev1): namespaces, which must exist
//     before anything is written into them, configmaps, secrets,
//     serviceaccounts and views of nodes, pods, claims and events (kubectl
//     describe reads an object's events there);
//   - the review APIs (package rbac): kubectl auth can-i, whoami.
//
// [NewGeneric] builds the server on Kubernetes' generic API server library
// (k8s.io/apiserver), which `virtkit controller --api-addr` serves. Every
// kind is a registry.Store over the store (package kubestorage), so
// objects written by cluster.Apply and the controllers through store.Store
// and those written through the API are the same data. The library's
// limits apply: requests in flight ([GenericOptions].MaxRequestsInFlight),
// the request timeout, body and JSON patch sizes
// ([GenericOptions].MaxRequestBytes), 415 for unsupported media types; Serve
// bounds the connections it keeps open ([GenericOptions].MaxConnections).
// With [GenericOptions].WatchCache the library's watch cache serves
// watches from memory, with periodic bookmarks. Watches are long-running
// requests the library does not count in flight; a filter after
// authorization bounds each user's open watches instead
// ([GenericOptions].MaxWatchesPerUser, [DefaultMaxWatchesPerUser]): one
// more is refused with 429 TooManyRequests and Retry-After, which
// client-go's watches and informers retry after, and counted in
// virtkit_apiserver_watches_refused_total{reason="user_limit"}
// ([WatchesRefusedMetric], registered into [GenericOptions].Registerer).
//
// Every write goes through virtkit's strict decoding and the admission
// chain of cluster.Apply ([admission.New]: instance type inference,
// defaulting with [virtkit.DefaultOptions], [virtkit.Validate], user
// admission with [virtkit.AdmitCreate] and [virtkit.AdmitUpdate], instance
// type checks), the role KubeVirt's webhooks play. Errors are metav1.Status objects with Kubernetes' reasons
// and codes: NotFound, AlreadyExists, Conflict, Invalid (details.causes
// carry the field paths), Forbidden, Unauthorized, Gone/Expired.
//
// Authentication and authorization: [GenericServer.Serve] serves TLS
// only. [EnsureCertificates] generates a CA, a serving certificate and an
// admin client certificate into a directory on first start. Clients
// authenticate with a client certificate signed by the CA
// ([ClientCertAuthenticator]: the common name is the user, the
// organizations its groups) or a bearer token from a file in
// kube-apiserver's static token format ([LoadTokenFile]). Anonymous
// requests are refused with Unauthorized, except a GET of the health
// checks (/healthz, /readyz, /livez) and /version, which system:anonymous
// may read as on kube-apiserver (system:public-info-viewer). Authorization is RBAC ([GenericOptions].Authorizer, by default
// the bootstrap policy of package rbac, which also reads virtkit's
// simpler rules by user or group and namespace); members of [AdminGroup]
// may do everything, anyone else only what a role grants — a user granted
// namespace team-a gets Forbidden for any other namespace, for
// all-namespace lists and watches and for cluster-scoped kinds.
//
// The status subresource is the control plane's record of what runs where,
// and node agents act on it: a VMI whose status.nodeName names a node is
// started there. Writes of RESOURCE/status (update and patch, every kind)
// are therefore not granted with a namespace: KubeVirt's kubevirt.io:edit
// role does not grant virtualmachineinstances/status either. A user gets
// Forbidden unless a role grants "RESOURCE/status" (in virtkit's simpler
// rules: names "RESOURCE/status" or "*/status" in its resources); reading
// the status stays with the namespace grant. Who may write it:
//
//   - members of [AdminGroup];
//   - the control plane: controllers and the scheduler when they use the
//     API, members of [ControlPlaneGroup];
//   - node agents, user [NodeUser](NAME) in [NodesGroup] (Kubernetes'
//     system:node:NAME in system:nodes), for the VMIs placed on node NAME
//     or migrating to or from it and for their own Node, nothing else, as
//     Kubernetes' NodeRestriction admission limits kubelets. Another
//     node's VMI is Forbidden.
//
// A status write changes the status only: spec, labels and annotations in
// its body are ignored, as Kubernetes' status strategy does. On a VMI a
// status admission step keeps the placement with the control plane:
// status.nodeName is set once, by the scheduler ([ControlPlaneGroup]),
// while it is empty, and changes afterwards only in the handover of a
// live migration that has ended and not failed, to the migration's target
// node, written by the control plane or by that target node's agent.
// Anything else that sets, changes or clears it is Invalid with a
// Forbidden cause at status.nodeName, for admins too; the migration's
// routing (status.migrationState.migrationUid, sourceNode, targetNode) is
// the control plane's alone. The placement label kubevirt.io/nodeName is
// metadata, which status writes never change and user updates may not set.
//
// virtkit's own controllers and node agents write to the store directly,
// not through this API, in one process as across hosts (etcd), so none of
// this stands in their way; the identities above are for components that
// a deployment runs against the API.
//
// subresources.kubevirt.io/v1, virtctl's verbs and streams (console, vnc,
// vnc/screenshot, portforward, start, stop, restart, migrate, softreboot,
// pause, unpause, the guest-agent ones, version, expand-spec), is served
// by package [github.com/virtkit/virtkit/apiserver/subresources]: the
// server hands it those requests with the authenticated user in the
// request's context and its Authorizer asked as a Kubernetes authorizer
// (get on virtualmachineinstances/console, update on
// virtualmachines/start, ...). Streams reach the node agent that runs the
// VMI (the URL in its Node's [NodeEndpointAnnotation]) with
// [GenericOptions].NodeTLS: a client certificate for [NodeClientUser] from the CA
// the agents trust ([Certificates.NodeTLSConfig]); without an in-process
// GuestInfo the guest-agent subresources are answered through the same
// endpoint. Streams open at once are bounded in total ([GenericOptions].MaxStreams)
// and per user ([GenericOptions].MaxStreamsPerUser): 429 TooManyRequests past them.
package apiserver
