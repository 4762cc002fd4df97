package rbac

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// LegacyRule is a rule of virtkit's former policy format ({rules: [{user,
// group, namespaces, verbs, resources}]}), field for field.
type LegacyRule struct {
	// User or Group the rule applies to (exactly one).
	User  string `json:"user,omitempty"`
	Group string `json:"group,omitempty"`
	// Namespaces the rule covers; "*" covers every namespace, all-namespace
	// lists and cluster-scoped kinds. Required.
	Namespaces []string `json:"namespaces"`
	// Verbs allowed; empty or "*" allows all.
	Verbs []string `json:"verbs,omitempty"`
	// Resources (plural names, optionally "RESOURCE/SUBRESOURCE") allowed;
	// empty or "*" allows all but writes of a status subresource, which
	// only a rule naming "RESOURCE/status" or "*/status" grants.
	Resources []string `json:"resources,omitempty"`
}

// LegacyVerbs are the verbs a legacy rule's empty or "*" verbs stand for.
func LegacyVerbs() []string {
	return []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
}

// LegacyWritableResources returns what a legacy rule's empty or "*"
// resources let update and patch: virtkit's resources and the
// subresources written with those verbs, every one but a status.
func LegacyWritableResources() []string {
	return []string{
		"virtualmachines", "virtualmachineinstances", "virtualmachineinstancemigrations",
		"virtualmachineinstancereplicasets", "virtualmachineinstancepresets", "migrationpolicies", "nodes",
		"ipleases", "datavolumes", "events", "controllerrevisions", "configmaps", "secrets", "serviceaccounts",
		"virtualmachineinstancetypes", "virtualmachineclusterinstancetypes",
		"virtualmachinepreferences", "virtualmachineclusterpreferences",
		"virtualmachinesnapshots", "virtualmachinesnapshotcontents", "virtualmachinerestores",
		"virtualmachineclones", "networkattachmentdefinitions", "kubevirts",
		"virtualmachineinstancereplicasets/scale",
		"virtualmachines/start", "virtualmachines/stop", "virtualmachines/restart", "virtualmachines/migrate",
		"virtualmachines/softreboot", "virtualmachines/addvolume", "virtualmachines/removevolume",
		"virtualmachines/memorydump",
		"virtualmachineinstances/pause", "virtualmachineinstances/unpause", "virtualmachineinstances/softreboot",
		"virtualmachineinstances/freeze", "virtualmachineinstances/unfreeze",
		"virtualmachineinstances/addvolume", "virtualmachineinstances/removevolume",
		"expand-vm-spec",
	}
}

// FromLegacy converts rules of the former policy format to RBAC objects
// granting the same. Rule i becomes ClusterRole "virtkit.io:legacy:i" and
// its bindings:
//
//   - user or group: the binding's one subject, a User or a Group;
//   - namespaces "*": a ClusterRoleBinding "virtkit.io:legacy:i" (every
//     namespace, all-namespace requests, cluster-scoped kinds); otherwise
//     a RoleBinding "virtkit.io:legacy:i" in each namespace named, which
//     grants nothing at the cluster scope, as before;
//   - apiGroups: ["*"] (the old rules did not name groups);
//   - verbs: as given; empty or "*" become [LegacyVerbs];
//   - resources named (neither empty nor "*"): as given, with the same
//     meaning in RBAC ("RESOURCE" the resource only,
//     "RESOURCE/SUBRESOURCE" that subresource, "*/status" every status);
//   - resources empty or "*": RBAC's "*" would also grant status writes,
//     which the old rules did not. They become resources ["*"] for the
//     verbs other than update and patch, and for update and patch the
//     resources of writable (nil: [LegacyWritableResources]), every
//     resource and non-status subresource the server serves; entries that
//     name resources beside "*" (such as "*/status") are kept.
//
// The old built-in grants are [Bootstrap]'s: AdminGroup and
// ControlPlaneGroup through cluster-admin, node agents through
// virtkit.io:node. An invalid rule is an error wrapping [ErrPolicy] that
// names its field (rules[i].namespaces).
func FromLegacy(rules []LegacyRule, writable []string) (*Policy, error) {
	if writable == nil {
		writable = LegacyWritableResources()
	}
	var errs field.ErrorList
	p := &Policy{}
	for i, lr := range rules {
		path := field.NewPath("rules").Index(i)
		if (lr.User == "") == (lr.Group == "") {
			errs = append(errs, field.Invalid(path, lr.User+lr.Group, "set exactly one of user and group"))
			continue
		}
		if len(lr.Namespaces) == 0 {
			errs = append(errs, field.Required(path.Child("namespaces"), `"*" for all`))
			continue
		}
		name := "virtkit.io:legacy:" + strconv.Itoa(i)
		p.ClusterRoles = append(p.ClusterRoles, clusterRole(name, nil, legacyRules(lr, writable)...))
		subject := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: lr.User}
		if lr.Group != "" {
			subject = rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: lr.Group}
		}
		ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
		if slices.Contains(lr.Namespaces, "*") {
			b := ClusterRoleBinding(name, name)
			b.Subjects = []rbacv1.Subject{subject}
			p.ClusterRoleBindings = append(p.ClusterRoleBindings, b)
			continue
		}
		for _, ns := range lr.Namespaces {
			p.RoleBindings = append(p.RoleBindings, rbacv1.RoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				RoleRef:    ref,
				Subjects:   []rbacv1.Subject{subject},
			})
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, errs.ToAggregate())
	}
	return p, nil
}

func legacyRules(lr LegacyRule, writable []string) []rbacv1.PolicyRule {
	all := []string{"*"}
	verbs := lr.Verbs
	if len(verbs) == 0 || slices.Contains(verbs, "*") {
		verbs = LegacyVerbs()
	}
	if len(lr.Resources) > 0 && !slices.Contains(lr.Resources, "*") {
		return []rbacv1.PolicyRule{rule(all, slices.Clone(lr.Resources), verbs...)}
	}
	var writes, others []string
	for _, v := range verbs {
		if v == "update" || v == "patch" {
			writes = append(writes, v)
		} else {
			others = append(others, v)
		}
	}
	var rules []rbacv1.PolicyRule
	if len(others) > 0 {
		rules = append(rules, rule(all, all, others...))
	}
	if len(writes) > 0 {
		rules = append(rules, rule(all, slices.Clone(writable), writes...))
	}
	var named []string
	for _, r := range lr.Resources {
		if r != "*" {
			named = append(named, r)
		}
	}
	if len(named) > 0 {
		rules = append(rules, rule(all, named, verbs...))
	}
	return rules
}

// legacyPolicy is the former policy file: {rules: [...]}.
type legacyPolicy struct {
	Rules []LegacyRule `json:"rules"`
}

// ParseLegacyPolicy reads a policy file of the former format, {rules:
// [{user, group, namespaces, verbs, resources}]} in YAML or JSON, strictly
// (an unknown field is an error naming its path), and converts it with
// [FromLegacy] and [LegacyWritableResources].
func ParseLegacyPolicy(r io.Reader) (*Policy, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxPolicyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	if len(data) > MaxPolicyBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrPolicy, MaxPolicyBytes)
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	var lp legacyPolicy
	if err := strict(js, &lp); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	return FromLegacy(lp.Rules, nil)
}

// LoadAnyPolicyFile reads a policy file of either format: RBAC objects
// ([ParsePolicy]) or, when its only top-level field is rules (no kind),
// the former format ([ParseLegacyPolicy]).
func LoadAnyPolicyFile(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrPolicy, err)
	}
	parse := ParsePolicy
	if isLegacy(data) {
		parse = ParseLegacyPolicy
	}
	p, err := parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// isLegacy reports whether data is one document with a top-level rules
// field and no kind.
func isLegacy(data []byte) bool {
	var top map[string]any
	if err := yaml.Unmarshal(data, &top); err != nil {
		return false
	}
	_, rules := top["rules"]
	_, kind := top["kind"]
	return rules && !kind
}
