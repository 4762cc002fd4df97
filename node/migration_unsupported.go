package node

import (
	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/guestagent"
)

// setMigrationUnsupported puts MigrationOptions.Unsupported on n as
// controller.MigrationUnsupportedAnnotation (or removes a stale one) and
// reports whether n changed.
func (a *Agent) setMigrationUnsupported(n *virtkit.Node) bool {
	want := guestagent.Sanitize(a.opts.Migration.Unsupported, 512)
	old, had := n.Annotations[controller.MigrationUnsupportedAnnotation]
	switch {
	case want == "" && !had, want != "" && had && old == want:
		return false
	case want == "":
		delete(n.Annotations, controller.MigrationUnsupportedAnnotation)
		return true
	}
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[controller.MigrationUnsupportedAnnotation] = want
	return true
}
