package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/store"
)

// MigrationNetworker is implemented by network resolvers that give each
// node its own copy of a VMI's host networking (network.Resolver). The
// node agent, when its Options.Domain.NetworkResolver has it:
//   - as a migration target, prepares its side before it publishes its
//     migration address (so the migration cannot start earlier), and
//     records where each interface attaches here in the VMI's
//     MigrationTargetNetworksAnnotation;
//   - as the source, sends a domain XML whose interfaces attach where the
//     target said (domain.RetargetInterfaces);
//   - as the target, activates its side once the guest runs there;
//   - releases its own copy after the VMI migrated away, after a failed
//     incoming migration, and when the VMI's guest is gone.
type MigrationNetworker interface {
	PrepareIncoming(ctx context.Context, vmi *virtkit.VirtualMachineInstance) (map[string]domain.HostNetwork, error)
	ActivateIncoming(ctx context.Context, vmi *virtkit.VirtualMachineInstance) error
	Release(ctx context.Context, vmi *virtkit.VirtualMachineInstance) error
}

// MigrationTargetNetworksAnnotation holds, on a migrating VMI, the
// target node's attachments for its interfaces (JSON of
// MigrationTargetNetworks), written by the target's agent.
const MigrationTargetNetworksAnnotation = "network.virtkit.io/migration-target"

// MigrationTargetNetworks is the value of
// MigrationTargetNetworksAnnotation.
type MigrationTargetNetworks struct {
	// MigrationUID and Node say which migration and target prepared it.
	MigrationUID string `json:"migrationUID"`
	Node         string `json:"node"`
	// Interfaces maps interface names to their attachment on Node.
	Interfaces map[string]TargetAttachment `json:"interfaces"`
}

// TargetAttachment is one interface's attachment on a migration target.
type TargetAttachment struct {
	Type   string `json:"type"`
	Source string `json:"source,omitempty"`
	MTU    uint   `json:"mtu,omitempty"`
}

// maxTargetNetworksAnnotation bounds what is parsed from the annotation.
const maxTargetNetworksAnnotation = 64 << 10

func targetNetworks(vmi *virtkit.VirtualMachineInstance) (*MigrationTargetNetworks, bool) {
	raw, ok := vmi.Annotations[MigrationTargetNetworksAnnotation]
	if !ok || len(raw) > maxTargetNetworksAnnotation {
		return nil, false
	}
	t := &MigrationTargetNetworks{}
	if json.Unmarshal([]byte(raw), t) != nil {
		return nil, false
	}
	return t, true
}

func (a *Agent) migrationNetworker() (MigrationNetworker, bool) {
	m, ok := a.opts.Domain.NetworkResolver.(MigrationNetworker)
	return m, ok
}

// prepareTargetNetworks prepares this node's side of the VMI's networks
// once per migration and records it in the annotation; vmi is refreshed
// with what was stored.
func (a *Agent) prepareTargetNetworks(ctx context.Context, vmi *virtkit.VirtualMachineInstance) error {
	mn, ok := a.migrationNetworker()
	ms := vmi.Status.MigrationState
	if !ok || ms == nil {
		return nil
	}
	if t, ok := targetNetworks(vmi); ok && t.MigrationUID == string(ms.MigrationUID) && t.Node == a.opts.NodeName {
		return nil
	}
	nets, err := mn.PrepareIncoming(ctx, vmi)
	if err != nil {
		return fmt.Errorf("migration target networks: %w", err)
	}
	val := MigrationTargetNetworks{MigrationUID: string(ms.MigrationUID), Node: a.opts.NodeName, Interfaces: map[string]TargetAttachment{}}
	for name, n := range nets {
		val.Interfaces[name] = TargetAttachment{Type: n.Type, Source: n.Source, MTU: n.MTU}
	}
	raw, err := json.Marshal(val)
	if err != nil {
		return err
	}
	key := store.Key{Namespace: vmi.Namespace, Name: vmi.Name}
	for range 5 {
		fresh := &virtkit.VirtualMachineInstance{}
		if err := a.opts.Store.Get(ctx, key, fresh); err != nil {
			return err
		}
		if fresh.UID != vmi.UID {
			return fmt.Errorf("migration target networks: %s: %w", key, store.ErrNotFound)
		}
		if fresh.Annotations == nil {
			fresh.Annotations = map[string]string{}
		}
		fresh.Annotations[MigrationTargetNetworksAnnotation] = string(raw)
		err := a.opts.Store.Update(ctx, fresh)
		if err == nil {
			*vmi = *fresh
			a.log.Info("migration target networks prepared", "vmi", key.String(), "interfaces", len(nets))
			return nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("migration target networks: %s: %w", key, store.ErrConflict)
}

// retargetNetworks is the source's half: the domain XML sent to the
// target attaches the interfaces where the target prepared them. sourceXML
// fetches the XML when dest is empty.
func (a *Agent) retargetNetworks(ctx context.Context, vmi *virtkit.VirtualMachineInstance, domName, dest string) (string, error) {
	ms := vmi.Status.MigrationState
	t, ok := targetNetworks(vmi)
	if !ok || ms == nil || t.MigrationUID != string(ms.MigrationUID) || t.Node != ms.TargetNode || len(t.Interfaces) == 0 {
		return dest, nil
	}
	if dest == "" {
		x, err := a.migrationSourceXML(ctx, domName)
		if err != nil {
			return "", fmt.Errorf("source domain XML: %w", err)
		}
		dest = x
	}
	nets := map[string]domain.HostNetwork{}
	for name, i := range t.Interfaces {
		nets[name] = domain.HostNetwork{Type: i.Type, Source: i.Source, MTU: i.MTU}
	}
	x, err := domain.RetargetInterfaces(dest, nets)
	if err != nil {
		return "", fmt.Errorf("destination XML: %w", err)
	}
	return x, nil
}

// netActivations remembers which incoming migrations' networks this node
// activated, so the target does it once.
type netActivations struct {
	mu   sync.Mutex
	done map[string]bool // migration UID
}

func (n *netActivations) once(uid string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.done == nil {
		n.done = map[string]bool{}
	}
	if n.done[uid] {
		return false
	}
	n.done[uid] = true
	if len(n.done) > 1024 {
		clear(n.done) // a bound; a repeated activation is harmless
		n.done[uid] = true
	}
	return true
}

func (n *netActivations) forget(uid string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.done, uid)
}

// activateTargetNetworks makes this node answer for the VMI's addresses
// once the guest runs here (after the switchover, or at once in
// post-copy).
func (a *Agent) activateTargetNetworks(ctx context.Context, vmi *virtkit.VirtualMachineInstance) {
	mn, ok := a.migrationNetworker()
	ms := vmi.Status.MigrationState
	if !ok || ms == nil || !a.netActive.once(string(ms.MigrationUID)) {
		return
	}
	if err := mn.ActivateIncoming(ctx, vmi); err != nil {
		a.netActive.forget(string(ms.MigrationUID))
		a.log.Warn("activating the networks of an incoming guest", "vmi", vmi.Namespace+"/"+vmi.Name, "err", err)
		return
	}
	a.log.Info("migration target networks active", "vmi", vmi.Namespace+"/"+vmi.Name)
}

// releaseNetworks removes this node's copy of the VMI's host networking.
func (a *Agent) releaseNetworks(ctx context.Context, vmi *virtkit.VirtualMachineInstance, why string) {
	mn, ok := a.migrationNetworker()
	if !ok || vmi == nil {
		return
	}
	if err := mn.Release(ctx, vmi); err != nil {
		a.log.Warn("releasing host networking", "vmi", vmi.Namespace+"/"+vmi.Name, "why", why, "err", err)
		return
	}
	a.log.Debug("released host networking", "vmi", vmi.Namespace+"/"+vmi.Name, "why", why)
}

// releaseMigratedNetworks is the source's cleanup after its guest left.
func (a *Agent) releaseMigratedNetworks(ctx context.Context, key store.Key) {
	if _, ok := a.migrationNetworker(); !ok {
		return
	}
	vmi := &virtkit.VirtualMachineInstance{}
	if err := a.opts.Store.Get(ctx, key, vmi); err != nil {
		return
	}
	a.releaseNetworks(ctx, vmi, "migrated away")
}
