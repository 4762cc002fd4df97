package virtkit

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// requiredFields are the fields KubeVirt's CRD schemas require that a
// typed object cannot tell apart from empty ones: Decode reports each as
// missing when every field above it is present. Paths are from the object
// root.
func requiredFields(kind string) [][]string {
	vmiSpec := [][]string{{"domain"}, {"domain", "devices"}}
	under := func(prefix ...string) [][]string {
		out := make([][]string, 0, len(vmiSpec))
		for _, p := range vmiSpec {
			out = append(out, append(append([]string{}, prefix...), p...))
		}
		return out
	}
	switch kind {
	case KindVirtualMachineInstance:
		return under("spec")
	case KindVirtualMachine, KindVirtualMachineInstanceReplicaSet:
		return under("spec", "template", "spec")
	}
	return nil
}

// missingRequired returns the first required field of m's kind that is
// absent while its parent is present.
func missingRequired(kind string, m map[string]any, base *field.Path) []*field.Path {
	var out []*field.Path
	for _, path := range requiredFields(kind) {
		cur := m
		p := base
		for i, name := range path {
			p = p.Child(name)
			v, ok := cur[name]
			if !ok || v == nil {
				out = append(out, p)
				break
			}
			next, isMap := v.(map[string]any)
			if !isMap {
				break // a value of the wrong type is reported by the walk
			}
			if i < len(path)-1 {
				cur = next
			}
		}
	}
	return dedupePrefixes(out)
}

// dedupePrefixes drops a path whose parent is also reported.
func dedupePrefixes(paths []*field.Path) []*field.Path {
	var out []*field.Path
	seen := map[string]bool{}
	for _, p := range paths {
		s := p.String()
		if seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, p)
	}
	return out
}
