package virtkit

// Requests to a VMI's node agent. KubeVirt's pause, unpause and softreboot
// subresources call virt-handler directly; virtkit has no API server between
// the caller and the node, so the action calls record the request on the VMI
// and the node agent that runs the domain acts on it.
const (
	// PauseRequestAnnotation on a VMI asks its node agent to keep the domain
	// paused (reason PausedByUser). Removing it asks for the domain to be
	// resumed. The value is the time of the request (RFC 3339), for humans.
	PauseRequestAnnotation = "virtkit.io/pause-requested"
	// SoftRebootRequestAnnotation asks the node agent to reboot the guest
	// through its guest agent (ACPI reboot when the agent is not connected).
	// The agent removes the annotation once the reboot was requested from
	// the guest; the value is an opaque request id.
	SoftRebootRequestAnnotation = "virtkit.io/soft-reboot-requested"
)
