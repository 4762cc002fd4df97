package virtkit

// ContainerPathVolumeSource is a directory of the VMI's runtime
// environment shared with the guest through virtiofs. In KubeVirt it is
// a path inside the launcher pod's container (for example a projected
// service account token); a virtkit node has no container and maps the
// path only to a host directory it allows.
type ContainerPathVolumeSource struct {
	// Path is the absolute path to share.
	Path string `json:"path"`
	// ReadOnly shares the path read-only: true, the default and the only
	// value supported.
	ReadOnly *bool `json:"readOnly,omitempty"`
}
