package apiserver

// The groups and user names the server gives a meaning to, as Kubernetes
// names them.
const (
	// AdminGroup is the group whose members may do everything.
	AdminGroup = "system:masters"
	// ControlPlaneGroup is the group of virtkit's controllers and
	// scheduler when they use the API: its members may do everything, and
	// only they place a VMI (status.nodeName).
	ControlPlaneGroup = "system:virtkit:control-plane"
	// NodesGroup is the group of node agents; each one's user is
	// NodeUser(its node's name).
	NodesGroup = "system:nodes"
	// NodeUserPrefix starts a node agent's user name: system:node:NAME.
	NodeUserPrefix = "system:node:"
)
