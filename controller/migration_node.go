package controller

import (
	"fmt"
	"slices"
	"strings"

	"github.com/virtkit/virtkit"
)

// migrationUnsupported returns why n cannot take part in migrations.
func migrationUnsupported(n *virtkit.Node) (string, bool) {
	reason, ok := n.Annotations[virtkit.MigrationUnsupportedAnnotation]
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
			failReason = fmt.Sprintf("%s: source node %s: %s", virtkit.MigrationReasonNodeUnsupported, src, truncateMsg(why, 256))
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
		return nil, fmt.Sprintf("%s: no target can receive it: %s", virtkit.MigrationReasonNodeUnsupported, strings.Join(refused, ", "))
	}
	return kept, ""
}
