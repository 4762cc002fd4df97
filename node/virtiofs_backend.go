package node

import (
	"context"
	"fmt"

	"github.com/virtkit/virtkit/domain"
)

// virtiofsBackend is a hypervisor that serves virtiofs shares itself, so
// the node starts no virtiofsd: the simulated host models a share as its
// tag and directory. The node still writes each share's files, as it does
// for virtiofsd.
type virtiofsBackend interface {
	ServeVirtiofs(ctx context.Context, domain, tag, dir string) error
	StopVirtiofs(domain string)
}

// serveShares writes the shares' files and hands them to the backend.
func (a *Agent) serveShares(ctx context.Context, sb virtiofsBackend, domName string, shares []domain.Share) error {
	sb.StopVirtiofs(domName)
	for _, sh := range shares {
		if err := writeShare(sh); err != nil {
			sb.StopVirtiofs(domName)
			return fmt.Errorf("%s: share %q: %w", sh.Field, sh.Name, err)
		}
		if err := sb.ServeVirtiofs(ctx, domName, sh.Name, sh.Dir); err != nil {
			sb.StopVirtiofs(domName)
			return fmt.Errorf("%s: share %q: %w", sh.Field, sh.Name, err)
		}
	}
	a.log.Info("virtiofs shares served by the hypervisor", "domain", domName, "shares", len(shares))
	return nil
}
