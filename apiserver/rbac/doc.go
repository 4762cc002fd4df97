// Package rbac authorizes API requests with Kubernetes RBAC objects (Role,
// ClusterRole with aggregation, RoleBinding, ClusterRoleBinding of
// rbac.authorization.k8s.io/v1) evaluated as Kubernetes' RBAC authorizer
// evaluates them, and serves the review APIs clients ask it through.
//
// [Authorizer] implements k8s.io/apiserver's authorizer.Authorizer and
// authorizer.RuleResolver. [New] builds it from [Policy] values: usually
// [Bootstrap] (the built-in roles and bindings) and a deployment's policy
// file read by [LoadPolicyFile] (multi-document YAML or JSON, or a kind:
// List; strict decoding, errors naming the field path, files bounded by
// [MaxPolicyBytes]). Policies in virtkit's former format ({rules: [{user,
// group, namespaces, verbs, resources}]}) convert with [FromLegacy] (the
// mapping is documented there) or read with [ParseLegacyPolicy];
// [LoadAnyPolicyFile] reads either format.
//
// Built in ([Bootstrap]): cluster-admin bound to system:masters and to
// virtkit's control plane (system:virtkit:control-plane); Kubernetes'
// discovery, basic-user and public-info-viewer roles, so that every
// authenticated user may discover the API and review itself; KubeVirt's
// kubevirt.io:admin, kubevirt.io:edit and kubevirt.io:view (none of them
// writes a status: the status is the control plane's record) and
// Kubernetes' aggregated admin, edit and view over them, which, as on
// Kubernetes, also read pods (view) and write them and create
// pods/eviction (edit, admin); virtkit.io:node
// for node agents (system:node:NAME in system:nodes). RBAC cannot say
// "only the VMIs on my node" or "only status.nodeName by the scheduler":
// that stays with the API server's admission.
//
// The review APIs are REST storage for k8s.io/apiserver's generic server:
// authorization.k8s.io/v1 SelfSubjectAccessReview (kubectl auth can-i) and
// SelfSubjectRulesReview (kubectl auth can-i --list), and
// authentication.k8s.io/v1 SelfSubjectReview (kubectl auth whoami).
// [Install] puts both groups on a GenericAPIServer; [NewScheme],
// [AuthorizationAPIGroupInfo] and [AuthenticationAPIGroupInfo] are the
// parts. The server's OpenAPI v3 definitions must include
// [OpenAPIDefinitions].
package rbac
