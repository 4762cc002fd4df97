package node

import (
	"context"
	"errors"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
)

// launchSecurityLabelKeys are the Node labels that say which
// confidential-guest platforms the host offers; the agent owns them when
// its hypervisor can tell.
var launchSecurityLabelKeys = []string{virtkit.SEVLabel, virtkit.SEVESLabel, virtkit.SEVSNPLabel, virtkit.TDXLabel}

// launchSecurityLabels returns the launch-security labels the Node must
// carry, as KubeVirt's node labeller publishes kubevirt.io/sev and
// kubevirt.io/sev-es: one "true" label per platform the hypervisor reports.
// It returns nil where the hypervisor cannot tell (a simulated host that
// models no platform): the labels the node was given then stand.
func (a *Agent) launchSecurityLabels(ctx context.Context) map[string]string {
	return a.launchSec.get(func() (map[string]string, bool) {
		r, ok := a.opts.Hypervisor.(hypervisor.LaunchSecurityReporter)
		if !ok {
			return nil, true
		}
		ls, err := r.LaunchSecurity(ctx)
		switch {
		case errors.Is(err, hypervisor.ErrNotSupported):
			return nil, true
		case err != nil:
			a.log.Warn("reading the host's launch security", "err", err)
			return nil, false
		}
		return launchSecurityLabelsOf(ls), true
	})
}

// launchSecurityLabelsOf turns what a host offers confidential guests
// into Node labels.
func launchSecurityLabelsOf(ls hypervisor.LaunchSecurity) map[string]string {
	out := map[string]string{}
	for key, on := range map[string]bool{
		virtkit.SEVLabel: ls.SEV, virtkit.SEVESLabel: ls.SEVES, virtkit.SEVSNPLabel: ls.SNP, virtkit.TDXLabel: ls.TDX,
	} {
		if on {
			out[key] = "true"
		}
	}
	return out
}

// applyLaunchSecurityLabels makes n's launch-security labels exactly want
// (nil: leave them as they are) and reports whether n changed.
func applyLaunchSecurityLabels(n *virtkit.Node, want map[string]string) bool {
	if want == nil {
		return false
	}
	changed := false
	for _, k := range launchSecurityLabelKeys {
		v, on := want[k]
		old, had := n.Labels[k]
		switch {
		case on && (!had || old != v):
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[k] = v
			changed = true
		case !on && had:
			delete(n.Labels, k)
			changed = true
		}
	}
	return changed
}
