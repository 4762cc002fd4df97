package rbac

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Authorizer evaluates RBAC objects as Kubernetes' RBAC authorizer does:
// a request is allowed when a rule of a role bound to the user allows it,
// and the authorizer has no opinion otherwise (RBAC never denies). The
// rules bound to a user in a namespace are those of every
// ClusterRoleBinding whose subjects name the user, one of its groups or
// its service account, and, for a request in a namespace, those of the
// RoleBindings of that namespace; a RoleBinding grants in its namespace
// only, also when it refers to a ClusterRole.
//
// A rule allows a resource request when its verbs, apiGroups, resources
// and resourceNames all match: a verb, group or resource "*" matches any;
// a resource "RESOURCE/SUBRESOURCE" matches that subresource only, a bare
// "RESOURCE" the resource only, "*/SUBRESOURCE" that subresource of any
// resource; empty resourceNames match any name. It allows a non-resource
// request when its verbs match and a nonResourceURL is "*", equals the
// path, or ends in "*" and is a prefix of the path without the "*".
//
// An Authorizer is immutable and safe for concurrent use.
type Authorizer struct {
	clusterRoles        map[string]*rbacv1.ClusterRole
	roles               map[string]map[string]*rbacv1.Role // namespace, name
	clusterRoleBindings []*rbacv1.ClusterRoleBinding
	roleBindings        map[string][]*rbacv1.RoleBinding // namespace
}

var (
	_ authorizer.Authorizer   = (*Authorizer)(nil)
	_ authorizer.RuleResolver = (*Authorizer)(nil)
)

// New returns an Authorizer of the objects of policies together (usually
// [Bootstrap] and the objects of a policy file). It validates them
// ([Validate]), refuses an object defined twice and a binding to a role
// that none defines, and resolves aggregated ClusterRoles ([Aggregate]).
// The objects are copied: later changes of policies do not affect it.
func New(policies ...*Policy) (*Authorizer, error) {
	all := &Policy{}
	for _, p := range policies {
		all.Append(p)
	}
	all = all.DeepCopy()
	if err := Validate(all); err != nil {
		return nil, err
	}
	if err := Aggregate(all); err != nil {
		return nil, err
	}
	a := &Authorizer{
		clusterRoles: map[string]*rbacv1.ClusterRole{},
		roles:        map[string]map[string]*rbacv1.Role{},
		roleBindings: map[string][]*rbacv1.RoleBinding{},
	}
	var errs []error
	for i := range all.ClusterRoles {
		r := &all.ClusterRoles[i]
		if _, dup := a.clusterRoles[r.Name]; dup {
			errs = append(errs, fmt.Errorf("%s %q: metadata.name: Duplicate value: %q", "ClusterRole", r.Name, r.Name))
		}
		a.clusterRoles[r.Name] = r
	}
	for i := range all.Roles {
		r := &all.Roles[i]
		if a.roles[r.Namespace] == nil {
			a.roles[r.Namespace] = map[string]*rbacv1.Role{}
		}
		if _, dup := a.roles[r.Namespace][r.Name]; dup {
			errs = append(errs, fmt.Errorf("%s %q: metadata.name: Duplicate value: %q", "Role", r.Namespace+"/"+r.Name, r.Name))
		}
		a.roles[r.Namespace][r.Name] = r
	}
	crbNames := map[string]bool{}
	for i := range all.ClusterRoleBindings {
		b := &all.ClusterRoleBindings[i]
		if crbNames[b.Name] {
			errs = append(errs, fmt.Errorf("%s %q: metadata.name: Duplicate value: %q", "ClusterRoleBinding", b.Name, b.Name))
		}
		crbNames[b.Name] = true
		if _, err := a.roleRefRules(b.RoleRef, ""); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: roleRef.name: Not found: %w", "ClusterRoleBinding", b.Name, err))
		}
		a.clusterRoleBindings = append(a.clusterRoleBindings, b)
	}
	rbNames := map[string]bool{}
	for i := range all.RoleBindings {
		b := &all.RoleBindings[i]
		id := b.Namespace + "/" + b.Name
		if rbNames[id] {
			errs = append(errs, fmt.Errorf("%s %q: metadata.name: Duplicate value: %q", "RoleBinding", id, b.Name))
		}
		rbNames[id] = true
		if _, err := a.roleRefRules(b.RoleRef, b.Namespace); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: roleRef.name: Not found: %w", "RoleBinding", id, err))
		}
		a.roleBindings[b.Namespace] = append(a.roleBindings[b.Namespace], b)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, errors.Join(errs...))
	}
	// Deterministic evaluation order (and so RulesFor output): by name.
	sort.SliceStable(a.clusterRoleBindings, func(i, j int) bool {
		return a.clusterRoleBindings[i].Name < a.clusterRoleBindings[j].Name
	})
	for _, bs := range a.roleBindings {
		sort.SliceStable(bs, func(i, j int) bool { return bs[i].Name < bs[j].Name })
	}
	return a, nil
}

// DeepCopy returns a copy of p sharing nothing with it.
func (p *Policy) DeepCopy() *Policy {
	out := &Policy{}
	for i := range p.Roles {
		out.Roles = append(out.Roles, *p.Roles[i].DeepCopy())
	}
	for i := range p.ClusterRoles {
		out.ClusterRoles = append(out.ClusterRoles, *p.ClusterRoles[i].DeepCopy())
	}
	for i := range p.RoleBindings {
		out.RoleBindings = append(out.RoleBindings, *p.RoleBindings[i].DeepCopy())
	}
	for i := range p.ClusterRoleBindings {
		out.ClusterRoleBindings = append(out.ClusterRoleBindings, *p.ClusterRoleBindings[i].DeepCopy())
	}
	return out
}

// roleRefRules returns the rules of the role ref refers to from a binding
// in namespace ("" for a ClusterRoleBinding).
func (a *Authorizer) roleRefRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "Role":
		if r, ok := a.roles[namespace][ref.Name]; ok {
			return r.Rules, nil
		}
		return nil, fmt.Errorf("role.rbac.authorization.k8s.io %q not found", ref.Name)
	case "ClusterRole":
		if r, ok := a.clusterRoles[ref.Name]; ok {
			return r.Rules, nil
		}
		return nil, fmt.Errorf("clusterrole.rbac.authorization.k8s.io %q not found", ref.Name)
	}
	return nil, fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
}

// visitor is called with each rule bound to a user and where it comes
// from, or with an error resolving a binding; it returns false to stop.
type visitor func(source string, rule *rbacv1.PolicyRule, err error) bool

// visitRules calls visit with every rule bound to u in namespace: those of
// the ClusterRoleBindings, then those of namespace's RoleBindings.
func (a *Authorizer) visitRules(u user.Info, namespace string, visit visitor) {
	for _, b := range a.clusterRoleBindings {
		i, ok := appliesTo(u, b.Subjects, "")
		if !ok {
			continue
		}
		rules, err := a.roleRefRules(b.RoleRef, "")
		if err != nil {
			if !visit("", nil, err) {
				return
			}
			continue
		}
		source := fmt.Sprintf("ClusterRoleBinding %q of %s %q to %s", b.Name, b.RoleRef.Kind, b.RoleRef.Name, describeSubject(b.Subjects[i], ""))
		for j := range rules {
			if !visit(source, &rules[j], nil) {
				return
			}
		}
	}
	if namespace == "" {
		return
	}
	for _, b := range a.roleBindings[namespace] {
		i, ok := appliesTo(u, b.Subjects, namespace)
		if !ok {
			continue
		}
		rules, err := a.roleRefRules(b.RoleRef, namespace)
		if err != nil {
			if !visit("", nil, err) {
				return
			}
			continue
		}
		source := fmt.Sprintf("RoleBinding %q of %s %q to %s", b.Name+"/"+b.Namespace, b.RoleRef.Kind, b.RoleRef.Name, describeSubject(b.Subjects[i], namespace))
		for j := range rules {
			if !visit(source, &rules[j], nil) {
				return
			}
		}
	}
}

func describeSubject(s rbacv1.Subject, bindingNamespace string) string {
	if s.Kind == rbacv1.ServiceAccountKind {
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		return fmt.Sprintf("%s %q", s.Kind, s.Name+"/"+ns)
	}
	return fmt.Sprintf("%s %q", s.Kind, s.Name)
}

// appliesTo returns the index of the first subject that names u.
func appliesTo(u user.Info, subjects []rbacv1.Subject, namespace string) (int, bool) {
	for i, s := range subjects {
		if subjectMatches(u, s, namespace) {
			return i, true
		}
	}
	return 0, false
}

// subjectMatches reports whether s names u: a User by name, a Group by
// one of u's groups, a ServiceAccount by its user name
// system:serviceaccount:NAMESPACE:NAME, the namespace defaulting to the
// binding's.
func subjectMatches(u user.Info, s rbacv1.Subject, namespace string) bool {
	switch s.Kind {
	case rbacv1.UserKind:
		return u.GetName() == s.Name
	case rbacv1.GroupKind:
		return slices.Contains(u.GetGroups(), s.Name)
	case rbacv1.ServiceAccountKind:
		ns := namespace
		if s.Namespace != "" {
			ns = s.Namespace
		}
		return ns != "" && u.GetName() == "system:serviceaccount:"+ns+":"+s.Name
	}
	return false
}

// Authorize implements authorizer.Authorizer: DecisionAllow when a rule
// bound to the user allows the request, with the binding that does as the
// reason; DecisionNoOpinion otherwise, never DecisionDeny.
func (a *Authorizer) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	u := attrs.GetUser()
	if u == nil {
		return authorizer.DecisionNoOpinion, "RBAC: no user", nil
	}
	var (
		allowedBy string
		errs      []error
	)
	a.visitRules(u, attrs.GetNamespace(), func(source string, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil && RuleAllows(attrs, rule) {
			allowedBy = source
			return false
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	})
	if allowedBy != "" {
		return authorizer.DecisionAllow, "RBAC: allowed by " + allowedBy, nil
	}
	if len(errs) > 0 {
		return authorizer.DecisionNoOpinion, fmt.Sprintf("RBAC: %v", errors.Join(errs...)), nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// ConditionsAwareAuthorize implements authorizer.Authorizer: RBAC
// decisions are unconditional.
func (a *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attrs))
}

// EvaluateConditions implements authorizer.Authorizer: RBAC has no
// conditions to evaluate.
func (a *Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// RulesFor implements authorizer.RuleResolver: every rule bound to u in
// namespace, resource rules and non-resource rules apart (a rule with
// both appears in both lists). The list is complete: incomplete is false.
func (a *Authorizer) RulesFor(_ context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	var (
		resourceRules    []authorizer.ResourceRuleInfo
		nonResourceRules []authorizer.NonResourceRuleInfo
		errs             []error
	)
	if u == nil {
		return nil, nil, false, errors.New("no user")
	}
	a.visitRules(u, namespace, func(_ string, rule *rbacv1.PolicyRule, err error) bool {
		if err != nil {
			errs = append(errs, err)
		}
		if rule == nil {
			return true
		}
		if len(rule.Resources) > 0 {
			resourceRules = append(resourceRules, &authorizer.DefaultResourceRuleInfo{
				Verbs: rule.Verbs, APIGroups: rule.APIGroups, Resources: rule.Resources, ResourceNames: rule.ResourceNames,
			})
		}
		if len(rule.NonResourceURLs) > 0 {
			nonResourceRules = append(nonResourceRules, &authorizer.DefaultNonResourceRuleInfo{
				Verbs: rule.Verbs, NonResourceURLs: rule.NonResourceURLs,
			})
		}
		return true
	})
	return resourceRules, nonResourceRules, false, errors.Join(errs...)
}

// RuleAllows reports whether rule allows the request attrs (see
// [Authorizer] for the matching).
func RuleAllows(attrs authorizer.Attributes, rule *rbacv1.PolicyRule) bool {
	if !matchesOrStar(rule.Verbs, rbacv1.VerbAll, attrs.GetVerb()) {
		return false
	}
	if !attrs.IsResourceRequest() {
		return nonResourceURLMatches(rule.NonResourceURLs, attrs.GetPath())
	}
	resource := attrs.GetResource()
	if sub := attrs.GetSubresource(); sub != "" {
		resource += "/" + sub
	}
	return matchesOrStar(rule.APIGroups, rbacv1.APIGroupAll, attrs.GetAPIGroup()) &&
		resourceMatches(rule.Resources, resource, attrs.GetSubresource()) &&
		(len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, attrs.GetName()))
}

func matchesOrStar(list []string, star, v string) bool {
	for _, x := range list {
		if x == star || x == v {
			return true
		}
	}
	return false
}

// resourceMatches: "*", the exact resource[/subresource], or
// "*/subresource" for a request of that subresource.
func resourceMatches(ruleResources []string, combined, subresource string) bool {
	for _, r := range ruleResources {
		if r == rbacv1.ResourceAll || r == combined {
			return true
		}
		if subresource != "" && r == "*/"+subresource {
			return true
		}
	}
	return false
}

func nonResourceURLMatches(ruleURLs []string, path string) bool {
	for _, u := range ruleURLs {
		if u == rbacv1.NonResourceAll || u == path {
			return true
		}
		if prefix, ok := strings.CutSuffix(u, "*"); ok && strings.HasPrefix(path, strings.TrimRight(prefix, "*")) {
			return true
		}
	}
	return false
}
