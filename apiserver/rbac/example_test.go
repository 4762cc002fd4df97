package rbac_test

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/virtkit/virtkit/apiserver/rbac"
)

// A policy file binds KubeVirt's edit role to a user in one namespace;
// together with the built-in policy it authorizes her requests there.
func Example() {
	p, err := rbac.ParsePolicy(strings.NewReader(`
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-edit, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "kubevirt.io:edit"}
subjects: [{kind: User, name: alice}]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	authz, err := rbac.New(rbac.Bootstrap(), p)
	if err != nil {
		fmt.Println(err)
		return
	}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{rbac.AuthenticatedGroup}}
	for _, a := range []authorizer.AttributesRecord{
		{Verb: "get", Namespace: "team-a", APIGroup: "subresources.kubevirt.io",
			Resource: "virtualmachineinstances", Subresource: "console", Name: "vm1"},
		{Verb: "update", Namespace: "team-a", APIGroup: "kubevirt.io",
			Resource: "virtualmachineinstances", Subresource: "status", Name: "vm1"},
		{Verb: "get", Namespace: "team-b", APIGroup: "kubevirt.io", Resource: "virtualmachines"},
	} {
		a.User, a.ResourceRequest = alice, true
		d, _, _ := authz.Authorize(context.Background(), a)
		fmt.Printf("%s %s/%s in %s: %v\n", a.Verb, a.Resource, a.Subresource, a.Namespace, d == authorizer.DecisionAllow)
	}
	// Output:
	// get virtualmachineinstances/console in team-a: true
	// update virtualmachineinstances/status in team-a: false
	// get virtualmachines/ in team-b: false
}
