package virtkit

import (
	"slices"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func (v *vmiValidator) scheduling() {
	sp := v.sp
	for k, val := range v.spec.NodeSelector {
		v.add(validateLabelPair(k, val, sp.Child("nodeSelector").Key(k))...)
	}
	effects := []TaintEffect{TaintEffectNoSchedule, TaintEffectPreferNoSchedule, TaintEffectNoExecute}
	for i, t := range v.spec.Tolerations {
		p := sp.Child("tolerations").Index(i)
		switch t.Operator {
		case TolerationOpExists:
			// A value is ignored with Exists; KubeVirt accepts one.
		case TolerationOpEqual, "":
			if t.Key == "" {
				v.add(field.Invalid(p.Child("operator"), t.Operator, "operator must be Exists when key is empty"))
			}
		default:
			v.add(field.NotSupported(p.Child("operator"), t.Operator, []TolerationOperator{TolerationOpExists, TolerationOpEqual}))
		}
		if t.Effect != "" && !slices.Contains(effects, t.Effect) {
			v.add(field.NotSupported(p.Child("effect"), t.Effect, effects))
		}
		if t.TolerationSeconds != nil && t.Effect != TaintEffectNoExecute {
			v.add(field.Invalid(p.Child("effect"), t.Effect, "tolerationSeconds needs effect NoExecute"))
		}
	}
	a := v.spec.Affinity
	if a == nil {
		return
	}
	ap := sp.Child("affinity")
	if na := a.NodeAffinity; na != nil {
		np := ap.Child("nodeAffinity")
		if r := na.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
			rp := np.Child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
			if len(r.NodeSelectorTerms) == 0 {
				v.add(field.Required(rp, "must have at least one node selector term"))
			}
			for i, term := range r.NodeSelectorTerms {
				v.nodeSelectorTerm(term, rp.Index(i))
			}
		}
		for i, pt := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			pp := np.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			v.weight(pt.Weight, pp.Child("weight"))
			v.nodeSelectorTerm(pt.Preference, pp.Child("preference"))
		}
	}
	podTerms := func(req []PodAffinityTerm, pref []WeightedPodAffinityTerm, p *field.Path) {
		for i, t := range req {
			v.podAffinityTerm(t, p.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i))
		}
		for i, t := range pref {
			pp := p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			v.weight(t.Weight, pp.Child("weight"))
			v.podAffinityTerm(t.PodAffinityTerm, pp.Child("podAffinityTerm"))
		}
	}
	if pa := a.PodAffinity; pa != nil {
		podTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, ap.Child("podAffinity"))
	}
	if pa := a.PodAntiAffinity; pa != nil {
		podTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, ap.Child("podAntiAffinity"))
	}
}

func (v *vmiValidator) weight(w int32, p *field.Path) {
	if w < 1 || w > 100 {
		v.add(field.Invalid(p, w, "must be in the range 1-100"))
	}
}

func (v *vmiValidator) nodeSelectorTerm(term NodeSelectorTerm, p *field.Path) {
	ops := []NodeSelectorOperator{NodeSelectorOpIn, NodeSelectorOpNotIn, NodeSelectorOpExists, NodeSelectorOpDoesNotExist, NodeSelectorOpGt, NodeSelectorOpLt}
	for _, group := range []struct {
		reqs []NodeSelectorRequirement
		name string
	}{{term.MatchExpressions, "matchExpressions"}, {term.MatchFields, "matchFields"}} {
		for j, r := range group.reqs {
			rp := p.Child(group.name).Index(j)
			if group.name == "matchFields" && r.Key != "metadata.name" {
				v.add(field.NotSupported(rp.Child("key"), r.Key, []string{"metadata.name"}))
			} else if group.name == "matchExpressions" {
				v.add(metav1validation.ValidateLabelName(r.Key, rp.Child("key"))...)
			}
			switch r.Operator {
			case NodeSelectorOpIn, NodeSelectorOpNotIn:
				if len(r.Values) == 0 {
					v.add(field.Required(rp.Child("values"), "must be specified when operator is In or NotIn"))
				}
			case NodeSelectorOpExists, NodeSelectorOpDoesNotExist:
				if len(r.Values) > 0 {
					v.add(field.Forbidden(rp.Child("values"), "may not be specified when operator is Exists or DoesNotExist"))
				}
			case NodeSelectorOpGt, NodeSelectorOpLt:
				if len(r.Values) != 1 {
					v.add(field.Required(rp.Child("values"), "must be a single integer when operator is Gt or Lt"))
				}
			default:
				v.add(field.NotSupported(rp.Child("operator"), r.Operator, ops))
			}
		}
	}
}

func (v *vmiValidator) podAffinityTerm(t PodAffinityTerm, p *field.Path) {
	if t.TopologyKey == "" {
		v.add(field.Required(p.Child("topologyKey"), "can not be empty"))
	} else {
		v.add(metav1validation.ValidateLabelName(t.TopologyKey, p.Child("topologyKey"))...)
	}
	opts := metav1validation.LabelSelectorValidationOptions{}
	if t.LabelSelector != nil {
		v.add(metav1validation.ValidateLabelSelector(t.LabelSelector, opts, p.Child("labelSelector"))...)
	}
	if t.NamespaceSelector != nil {
		v.add(metav1validation.ValidateLabelSelector(t.NamespaceSelector, opts, p.Child("namespaceSelector"))...)
	}
}
