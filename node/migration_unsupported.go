package node

import (
	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/guestagent"
)

// setMigrationUnsupported puts MigrationOptions.Unsupported on n as
// virtkit.MigrationUnsupportedAnnotation (or removes a stale one) and
// reports whether n changed.
func (a *Agent) setMigrationUnsupported(n *virtkit.Node) bool {
	want := guestagent.Sanitize(a.opts.Migration.Unsupported, 512)
	old, had := n.Annotations[virtkit.MigrationUnsupportedAnnotation]
	switch {
	case want == "" && !had, want != "" && had && old == want:
		return false
	case want == "":
		delete(n.Annotations, virtkit.MigrationUnsupportedAnnotation)
		return true
	}
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[virtkit.MigrationUnsupportedAnnotation] = want
	return true
}
