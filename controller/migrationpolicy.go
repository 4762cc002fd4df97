package controller

import (
	"github.com/virtkit/virtkit"
)

// MatchMigrationPolicy returns the policy that applies to vmi, or nil, with
// KubeVirt's precedence: a policy needs selectors; every
// key of its virtualMachineInstanceSelector must equal a VMI label and
// every key of its namespaceSelector a label of the VMI's namespace
// (nsLabels). The policy matching the most labels wins; on a tie in total
// the one matching more VMI labels; on a full tie the lexicographically
// smallest name. As in KubeVirt, selectors are only evaluated when the VMI
// has labels at all: a VMI with a nil label map matches every policy that
// has selectors, with score zero.
func MatchMigrationPolicy(policies []virtkit.MigrationPolicy, vmi *virtkit.VirtualMachineInstance, nsLabels map[string]string) *virtkit.MigrationPolicy {
	var best *virtkit.MigrationPolicy
	var bestScore policyScore
	for i := range policies {
		p := &policies[i]
		score, ok := scorePolicy(p, vmi.Labels, nsLabels)
		if !ok {
			continue
		}
		if best == nil || score.beats(bestScore) || (score == bestScore && p.Name < best.Name) {
			best, bestScore = p, score
		}
	}
	return best
}

type policyScore struct{ vmi, ns int }

func (s policyScore) beats(o policyScore) bool {
	if s.vmi+s.ns != o.vmi+o.ns {
		return s.vmi+s.ns > o.vmi+o.ns
	}
	return s.vmi > o.vmi
}

// scorePolicy counts the labels a policy matches; ok is false when it does
// not apply.
func scorePolicy(p *virtkit.MigrationPolicy, vmiLabels, nsLabels map[string]string) (policyScore, bool) {
	sel := p.Spec.Selectors
	if sel == nil {
		return policyScore{}, false
	}
	var s policyScore
	if vmiLabels == nil {
		// KubeVirt's quirk: both selectors are skipped for a VMI without
		// labels (the namespace check is also keyed on the VMI's labels).
		return s, true
	}
	var ok bool
	if sel.VirtualMachineInstanceSelector != nil {
		if s.vmi, ok = countMatches(sel.VirtualMachineInstanceSelector, vmiLabels); !ok {
			return policyScore{}, false
		}
	}
	if sel.NamespaceSelector != nil {
		if s.ns, ok = countMatches(sel.NamespaceSelector, nsLabels); !ok {
			return policyScore{}, false
		}
	}
	return s, true
}

func countMatches(want virtkit.LabelSelectorMap, have map[string]string) (int, bool) {
	for k, v := range want {
		got, found := have[k]
		if !found || got != v {
			return 0, false
		}
	}
	return len(want), true
}

// ResolveMigrationConfiguration returns the configuration a migration of a
// VMI uses: the cluster configuration (already merged over the defaults,
// see [virtkit.ClusterMigrationConfiguration]) with the fields the policy sets on
// top. A policy can change allowAutoConverge, bandwidthPerMigration,
// completionTimeoutPerGiB, maxDowntimeMs, allowPostCopy and
// allowWorkloadDisruption (which follows allowPostCopy when the policy sets
// only the latter); a policy that sets completionTimeoutPerGiB also drops
// the cluster's virtkit extension VirtkitMaxCompletionTimeoutPerGiB, so that
// timeout is final; parallelism, progressTimeout, TLS, network and the
// unsafe override stay the cluster's. policy may be nil.
func ResolveMigrationConfiguration(cluster *virtkit.MigrationConfiguration, policy *virtkit.MigrationPolicy) *virtkit.MigrationConfiguration {
	out := virtkit.ClusterMigrationConfiguration(cluster)
	if policy == nil {
		return out
	}
	ps := policy.Spec.DeepCopy()
	setIf(&out.AllowAutoConverge, ps.AllowAutoConverge)
	setIf(&out.BandwidthPerMigration, ps.BandwidthPerMigration)
	if ps.CompletionTimeoutPerGiB != nil {
		// A policy's explicit timeout is final: no extension past it.
		out.CompletionTimeoutPerGiB = ps.CompletionTimeoutPerGiB
		out.VirtkitMaxCompletionTimeoutPerGiB = nil
	}
	setIf(&out.MaxDowntimeMs, ps.MaxDowntimeMs)
	setIf(&out.AllowPostCopy, ps.AllowPostCopy)
	switch {
	case ps.AllowWorkloadDisruption != nil:
		out.AllowWorkloadDisruption = ps.AllowWorkloadDisruption
	case ps.AllowPostCopy != nil:
		out.AllowWorkloadDisruption = ptrTo(*ps.AllowPostCopy)
	}
	return out
}

func setIf[T any](dst **T, src *T) {
	if src != nil {
		*dst = src
	}
}

func ptrTo[T any](v T) *T { return &v }
