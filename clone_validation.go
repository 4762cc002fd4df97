package virtkit

import (
	"net"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Rule C1: a clone's source is a VirtualMachine or a VirtualMachineSnapshot
// and its target a VirtualMachine other than the source; filters are glob
// patterns; new MAC addresses are MAC addresses; patches are single JSON
// patch operations under /spec/, /metadata/labels/ or
// /metadata/annotations/ (ValidateVMPatches).
func validateClone(c *VirtualMachineClone) field.ErrorList {
	errs := validateObjectMeta(&c.ObjectMeta, true, field.NewPath("metadata"))
	sp := field.NewPath("spec")
	src := c.Spec.Source
	if src == nil {
		errs = append(errs, field.Required(sp.Child("source"), "the VirtualMachine or VirtualMachineSnapshot to clone"))
	} else {
		p := sp.Child("source")
		group := ""
		switch src.Kind {
		case KindVirtualMachine:
			group = GroupName
		case KindVirtualMachineSnapshot:
			group = SnapshotGroupName
		default:
			errs = append(errs, field.NotSupported(p.Child("kind"), src.Kind, []string{KindVirtualMachine, KindVirtualMachineSnapshot}))
		}
		switch {
		case src.APIGroup == nil:
			errs = append(errs, field.Required(p.Child("apiGroup"), "missing apiGroup"))
		case group != "" && *src.APIGroup != group:
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), *src.APIGroup, []string{group}))
		}
		if src.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), "name of the source"))
		}
	}
	if t := c.Spec.Target; t != nil {
		p := sp.Child("target")
		switch {
		case t.APIGroup == nil:
		case *t.APIGroup != GroupName:
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), *t.APIGroup, []string{GroupName}))
		}
		if t.Kind != KindVirtualMachine {
			errs = append(errs, field.NotSupported(p.Child("kind"), t.Kind, []string{KindVirtualMachine}))
		}
		if src != nil && src.Kind == KindVirtualMachine && t.Name != "" && t.Name == src.Name {
			errs = append(errs, field.Invalid(p.Child("name"), t.Name, "the target must not be the source VirtualMachine"))
		}
	}
	errs = append(errs, validateCloneFilters(c.Spec.LabelFilters, sp.Child("labelFilters"))...)
	errs = append(errs, validateCloneFilters(c.Spec.AnnotationFilters, sp.Child("annotationFilters"))...)
	tp := sp.Child("template")
	errs = append(errs, validateCloneFilters(c.Spec.Template.LabelFilters, tp.Child("labelFilters"))...)
	errs = append(errs, validateCloneFilters(c.Spec.Template.AnnotationFilters, tp.Child("annotationFilters"))...)
	for _, iface := range sortedKeys(c.Spec.NewMacAddresses) {
		p := sp.Child("newMacAddresses").Key(iface)
		if iface == "" {
			errs = append(errs, field.Invalid(p, iface, "the interface name must not be empty"))
		}
		mac := c.Spec.NewMacAddresses[iface]
		if hw, err := net.ParseMAC(mac); mac != "" && (err != nil || len(hw) != 6) {
			errs = append(errs, field.Invalid(p, mac, "must be a MAC address such as 02:00:00:00:00:01"))
		}
	}
	if vp := c.Spec.VolumeNamePolicy; vp != nil && *vp != VolumeRestorePolicyRandomizeNames {
		errs = append(errs, field.NotSupported(sp.Child("volumeNamePolicy"), *vp, []VolumeRestorePolicy{VolumeRestorePolicyRandomizeNames}))
	}
	errs = append(errs, ValidateVMPatches(c.Spec.Patches, sp.Child("patches"))...)
	return errs
}

// validateCloneFilters checks label or annotation filters as KubeVirt's
// admission does: '!' may only lead a filter (negating it) and '*' may
// only end one; '!' alone and the empty filter match nothing and are
// refused.
func validateCloneFilters(filters []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, f := range filters {
		pat := strings.TrimPrefix(f, "!")
		switch {
		case pat == "":
			errs = append(errs, field.Invalid(p.Index(i), f, "a filter must name a key or a key prefix ending in '*' (a leading '!' excludes)"))
		case strings.Contains(pat, "!"):
			errs = append(errs, field.Invalid(p.Index(i), f, "'!' may only lead a filter, negating it"))
		case strings.Contains(pat[:len(pat)-1], "*"):
			errs = append(errs, field.Invalid(p.Index(i), f, "'*' may only end a filter"))
		}
	}
	return errs
}

// CloneFilterKeep reports whether a clone with these filters copies a
// label or annotation key: nil filters keep every key; otherwise a key is
// kept when a filter matches it and no negated ('!') filter does. A
// filter matches its key, or with a trailing '*' every key it prefixes
// ('*' alone matches every key, slashes included).
func CloneFilterKeep(filters []string, key string) bool {
	if filters == nil {
		return true
	}
	keep := false
	for _, f := range filters {
		if neg, ok := strings.CutPrefix(f, "!"); ok {
			if globMatch(neg, key) {
				return false
			}
			continue
		}
		if globMatch(f, key) {
			keep = true
		}
	}
	return keep
}

// FilterCloneMap returns the entries of m whose keys CloneFilterKeep
// keeps (nil when none).
func FilterCloneMap(m map[string]string, filters []string) map[string]string {
	var out map[string]string
	for k, v := range m {
		if CloneFilterKeep(filters, k) {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// globMatch matches s against pattern, whose only wildcard is '*' (any
// run of characters, possibly empty).
func globMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return len(s) >= len(last) && strings.HasSuffix(s, last)
}
