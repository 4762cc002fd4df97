package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// Define makes or replaces a persistent domain from libvirt domain XML.
func (h *Host) Define(ctx context.Context, domainXML string) (hypervisor.DomainID, error) {
	if err := ctx.Err(); err != nil {
		return hypervisor.DomainID{}, err
	}
	sp, err := parseSpec(domainXML)
	if err != nil {
		name := ""
		if sp != nil {
			name = sp.name
		}
		return hypervisor.DomainID{}, hypervisor.WrapDomain("define", name, err)
	}
	var id hypervisor.DomainID
	err = h.do(ctx, func(now time.Time) error {
		if other := h.domainByUUID(sp.uuid); other != nil && other.name() != sp.name {
			return hypervisor.WrapDomain("define", sp.name, fmt.Errorf("UUID %s belongs to domain %q: %w", sp.uuid, other.name(), hypervisor.ErrExists))
		}
		d, ok := h.domains[sp.name]
		if ok {
			if sp.uuid == "" {
				sp.uuid = d.uuid()
			} else if sp.uuid != d.uuid() {
				return hypervisor.WrapDomain("define", sp.name, fmt.Errorf("already defined with UUID %s: %w", d.uuid(), hypervisor.ErrExists))
			}
			if d.incoming != nil {
				return invalidState("define", sp.name, "an incoming migration owns the domain")
			}
		}
		if sp.uuid == "" {
			sp.uuid = stableUUID(h.opts.UUID + "/domain/" + sp.name)
		}
		sp.def.UUID = sp.uuid
		if !ok {
			d = &domain{config: sp, state: hypervisor.StateShutoff, reason: hypervisor.ReasonUnknown, updated: now}
			h.add(d)
		}
		d.config = sp
		h.indexUUID(d)
		d.persistent = true
		if !d.state.IsActive() {
			d.setWorkloadModel(now)
		}
		id = hypervisor.DomainID{Name: sp.name, UUID: sp.uuid}
		h.log.Debug("defined domain", "host", h.opts.Name, "domain", sp.name, "uuid", sp.uuid)
		return nil
	})
	return id, err
}

// Undefine removes a domain's persistent definition; a running domain
// stays as a transient one.
func (h *Host) Undefine(ctx context.Context, name string) error {
	return h.do(ctx, func(now time.Time) error {
		d, err := h.lookup("undefine", name)
		if err != nil {
			return err
		}
		if d.incoming != nil {
			return invalidState("undefine", name, "an incoming migration owns the domain")
		}
		if d.state.IsActive() {
			d.persistent = false
			return nil
		}
		h.remove(name)
		return nil
	})
}
