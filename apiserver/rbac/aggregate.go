package rbac

import (
	"fmt"
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Aggregate sets the rules of every ClusterRole of p that has an
// aggregationRule as Kubernetes' cluster role aggregation controller does:
// to the rules of the other ClusterRoles its selectors match, selector by
// selector, the matching roles by name, each distinct rule once. The rules
// the aggregated role lists itself are replaced. Aggregated roles may
// select one another; Aggregate repeats until nothing changes, as the
// controller converges, so a chain (view into edit into admin) resolves
// fully.
func Aggregate(p *Policy) error {
	type agg struct {
		idx       int
		selectors []labels.Selector
	}
	var aggs []agg
	for i := range p.ClusterRoles {
		ar := p.ClusterRoles[i].AggregationRule
		if ar == nil {
			continue
		}
		a := agg{idx: i}
		for j := range ar.ClusterRoleSelectors {
			sel, err := metav1.LabelSelectorAsSelector(&ar.ClusterRoleSelectors[j])
			if err != nil {
				return fmt.Errorf("%w: ClusterRole %q: aggregationRule.clusterRoleSelectors[%d]: %w", ErrPolicy, p.ClusterRoles[i].Name, j, err)
			}
			a.selectors = append(a.selectors, sel)
		}
		aggs = append(aggs, a)
		p.ClusterRoles[i].Rules = nil
	}
	if len(aggs) == 0 {
		return nil
	}
	byName := make([]int, len(p.ClusterRoles))
	for i := range byName {
		byName[i] = i
	}
	sort.SliceStable(byName, func(i, j int) bool { return p.ClusterRoles[byName[i]].Name < p.ClusterRoles[byName[j]].Name })

	// Every pass only adds rules, and there are finitely many, so this
	// ends; the bound is a guard.
	for pass := 0; pass <= len(aggs)+1; pass++ {
		changed := false
		for _, a := range aggs {
			self := &p.ClusterRoles[a.idx]
			var rules []rbacv1.PolicyRule
			for _, sel := range a.selectors {
				for _, k := range byName {
					other := &p.ClusterRoles[k]
					if other.Name == self.Name || !sel.Matches(labels.Set(other.Labels)) {
						continue
					}
					for _, r := range other.Rules {
						if !containsRule(rules, r) {
							rules = append(rules, *r.DeepCopy())
						}
					}
				}
			}
			if !equality.Semantic.DeepEqual(rules, self.Rules) {
				self.Rules = rules
				changed = true
			}
		}
		if !changed {
			return nil
		}
	}
	return fmt.Errorf("%w: cluster role aggregation does not settle", ErrPolicy)
}

func containsRule(rules []rbacv1.PolicyRule, r rbacv1.PolicyRule) bool {
	for i := range rules {
		if equality.Semantic.DeepEqual(rules[i], r) {
			return true
		}
	}
	return false
}
