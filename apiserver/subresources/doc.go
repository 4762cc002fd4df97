// Package subresources serves KubeVirt's subresources.kubevirt.io/v1 API
// group, virtctl's verbs and streams, as an http.Handler to mount under
// /apis/subresources.kubevirt.io (a generic API server mounts it on its
// NonGoRestfulMux, the way KubeVirt's virt-api serves the group with its
// own handlers rather than registry storage).
//
// Identity and authorization are Kubernetes': the user is the one the
// server's authentication put in the request's context
// (k8s.io/apiserver/pkg/endpoints/request.WithUser); a request without one
// is Unauthorized. Each request is authorized with Options.Authorizer,
// asked with the attributes kube-apiserver builds for the path — group
// subresources.kubevirt.io, version v1, resource virtualmachineinstances
// or virtualmachines, the subresource, the object's name and namespace —
// and the verb KubeVirt's roles grant: get for console, vnc,
// vnc/screenshot, portforward, guestosinfo, userlist, filesystemlist and a
// VM's expand-spec and portforward; update for start, stop, restart,
// migrate, softreboot, pause, unpause and the namespace's expand-vm-spec.
// A refusal is kube-apiserver's Forbidden status with the authorizer's
// reason. Discovery and version are answered to every user, as KubeVirt's
// kubevirt.io:default role grants them to all. Errors are metav1.Status
// objects with Kubernetes' reasons.
//
// Streams: console, vnc and portforward/PORT[/tcp|udp] of a VMI (and a
// VM's portforward, which goes to its VMI's) are WebSockets (subprotocol
// StreamSubprotocol, binary frames) proxied to the endpoint of the node
// agent that runs the VMI (the URL in its Node's NodeEndpointAnnotation)
// with Options.NodeTLS, a client certificate for NodeClientUser. A normal
// close frame ends one direction only, as a TCP half-close does: it is
// passed on, and the other direction goes on until its own close frame,
// so a port-forward client that sends and closes its side still gets the
// guest's whole reply. Streams open at once are bounded in total
// (Options.MaxStreams) and per user (Options.MaxStreamsPerUser); one more
// is refused with 429 TooManyRequests. LongRunning tells a server which
// requests are streams. vnc/screenshot[?moveCursor=true] is a plain GET
// answered image/png with the frame the node agent takes.
//
// Actions: start, stop, restart, migrate and softreboot of a VM, pause,
// unpause and softreboot of a VMI (PUT, 202 Accepted, options bodies with
// dryRun as KubeVirt's), the guest-agent subresources (from
// Options.GuestInfo, else from the node agent's endpoint), version
// (KubeVirt's version info from the binary's build information),
// expand-spec of a stored VM (GET virtualmachines/NAME/expand-spec) and of
// a VM given (PUT namespaces/NS/expand-vm-spec, KubeVirt's path;
// expand-spec is accepted too). addvolume and removevolume take virtctl's
// AddVolumeOptions and RemoveVolumeOptions: on a VMI they change its spec
// (the node agent attaches or detaches the disk), on a VM they queue a
// volume request the VM controller applies to its template and its
// running VMI; refusals carry KubeVirt's messages (409 for a name in use,
// a volume that is not hot-pluggable or a VMI that is not running, 422
// with field paths for a disk the VMI cannot take).
//
// Discovery: the handler answers /apis/subresources.kubevirt.io and
// /apis/subresources.kubevirt.io/v1 itself; APIGroup, APIResourceList and
// APIVersionDiscovery give a server the same documents for its /apis list
// and its aggregated discovery.
package subresources
