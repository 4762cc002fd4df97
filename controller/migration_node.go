package controller

import (
	"fmt"
	"slices"
	"strings"

	"github.com/virtkit/virtkit"
)

// MigrationUnsupportedAnnotation on a Node says that its agent cannot take
// part in live migrations, and why (a libvirt node started without a
// migration URI, say). The node
// agent sets it at start-up; the migration controller never picks such a
// node as a target and fails a migration whose source it is, with the
// reason in status.migrationState.failureReason.
const MigrationUnsupportedAnnotation = "virtkit.io/migration-unsupported"

// MigrationReasonNodeUnsupported starts the failure reason of a migration
// whose source node, or every possible target, cannot take part in
// migrations.
const MigrationReasonNodeUnsupported = "node cannot take part in migrations"

// migrationUnsupported returns why n cannot take part in migrations.
func migrationUnsupported(n *virtkit.Node) (string, bool) {
	reason, ok := n.Annotations[MigrationUnsupportedAnnotation]
	return reason, ok
}

// migrationCapable splits the target candidates: nodes that can receive a
// migration stay, the others are described in refused. It fails (a
// non-empty reason) when the source cannot send one, or when candidates
// were refused and none remain.
func migrationCapable(nodes []virtkit.Node, src string) (kept []virtkit.Node, failReason string) {
	var refused []string
	kept = slices.DeleteFunc(nodes, func(n virtkit.Node) bool {
		why, ok := migrationUnsupported(&n)
		if ok && n.Name == src {
			failReason = fmt.Sprintf("%s: source node %s: %s", MigrationReasonNodeUnsupported, src, truncateMsg(why, 256))
		}
		if ok && n.Name != src {
			refused = append(refused, fmt.Sprintf("%s (%s)", n.Name, truncateMsg(why, 128)))
		}
		return ok
	})
	if failReason != "" {
		return nil, failReason
	}
	others := slices.ContainsFunc(kept, func(n virtkit.Node) bool { return n.Name != src })
	if len(refused) > 0 && !others {
		return nil, fmt.Sprintf("%s: no target can receive it: %s", MigrationReasonNodeUnsupported, strings.Join(refused, ", "))
	}
	return kept, ""
}
