package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// API groups the KubeVirt roles name.
const (
	GroupKubeVirt     = "kubevirt.io"
	GroupSubresources = "subresources.kubevirt.io"
	GroupSnapshot     = "snapshot.kubevirt.io"
	GroupExport       = "export.kubevirt.io"
	GroupClone        = "clone.kubevirt.io"
	GroupInstancetype = "instancetype.kubevirt.io"
	GroupPool         = "pool.kubevirt.io"
	GroupMigrations   = "migrations.kubevirt.io"
)

// KubeVirtClusterRoles returns the cluster roles KubeVirt's operator
// installs, with the same rules: kubevirt.io:default (the version and
// guestfs endpoints), kubevirt.io:admin, kubevirt.io:edit,
// kubevirt.io:view and instancetype.kubevirt.io:view. admin, edit and view
// carry Kubernetes' aggregate-to-admin, -edit and -view labels.
//
// In short: view reads the kubevirt.io kinds and the guest-agent
// subresources (guestosinfo, userlist, filesystemlist), expands VM specs;
// edit adds writes of the kinds, the VMI streams (console, vnc,
// vnc/screenshot, portforward) and actions (pause, unpause, freeze,
// unfreeze, softreboot, addvolume, removevolume) and the VM actions
// (start, stop, restart, migrate, addvolume, removevolume, memorydump);
// admin adds deletecollection. None grants a status subresource: the
// status is the control plane's record.
//
// virtkit serves two subresources KubeVirt does not, and grants them
// where KubeVirt grants their relatives: virtualmachines/softreboot
// (update, with the VM actions, to edit and admin) and
// virtualmachineinstancereplicasets/scale (get to view; get, update and
// patch to edit and admin).
func KubeVirtClusterRoles() []rbacv1.ClusterRole {
	read := []string{"get", "list", "watch"}
	write := []string{"get", "delete", "create", "update", "patch", "list", "watch"}
	adminWrite := append(append([]string{}, write...), "deletecollection")

	sub := []string{GroupSubresources}
	vmiReads := []string{"virtualmachineinstances/guestosinfo", "virtualmachineinstances/filesystemlist",
		"virtualmachineinstances/userlist", "virtualmachineinstances/sev/fetchcertchain",
		"virtualmachineinstances/sev/querylaunchmeasurement"}
	vmiStreams := append([]string{"virtualmachineinstances/console", "virtualmachineinstances/vnc",
		"virtualmachineinstances/vnc/screenshot", "virtualmachineinstances/portforward"}, vmiReads...)
	vmiActions := []string{"virtualmachineinstances/pause", "virtualmachineinstances/unpause",
		"virtualmachineinstances/addvolume", "virtualmachineinstances/removevolume",
		"virtualmachineinstances/freeze", "virtualmachineinstances/unfreeze", "virtualmachineinstances/softreboot",
		"virtualmachineinstances/sev/setupsession", "virtualmachineinstances/sev/injectlaunchsecret"}
	vmActions := []string{"virtualmachines/start", "virtualmachines/stop", "virtualmachines/restart",
		"virtualmachines/addvolume", "virtualmachines/removevolume", "virtualmachines/migrate",
		"virtualmachines/memorydump", "virtualmachines/softreboot"}
	kinds := []string{"virtualmachines", "virtualmachineinstances", "virtualmachineinstancepresets",
		"virtualmachineinstancereplicasets", "virtualmachineinstancemigrations"}
	instancetypes := []string{"virtualmachineinstancetypes", "virtualmachineclusterinstancetypes",
		"virtualmachinepreferences", "virtualmachineclusterpreferences"}
	scale := []string{"virtualmachineinstancereplicasets/scale"}

	others := func(verbs []string) []rbacv1.PolicyRule {
		return []rbacv1.PolicyRule{
			rule([]string{GroupSnapshot}, []string{"virtualmachinesnapshots", "virtualmachinesnapshotcontents", "virtualmachinerestores"}, verbs...),
			rule([]string{GroupExport}, []string{"virtualmachineexports"}, verbs...),
			rule([]string{GroupClone}, []string{"virtualmachineclones"}, verbs...),
			rule([]string{GroupInstancetype}, instancetypes, verbs...),
			rule([]string{GroupPool}, []string{"virtualmachinepools"}, verbs...),
		}
	}
	editing := func(kindVerbs []string) []rbacv1.PolicyRule {
		rules := []rbacv1.PolicyRule{
			rule(sub, vmiStreams, "get"),
			rule(sub, vmiActions, "update"),
			rule(sub, []string{"virtualmachines/expand-spec", "virtualmachines/portforward"}, "get"),
			rule(sub, vmActions, "update"),
			rule(sub, []string{"expand-vm-spec"}, "update"),
			rule([]string{GroupKubeVirt}, kinds, kindVerbs...),
			rule([]string{GroupKubeVirt}, scale, "get", "update", "patch"),
		}
		return append(rules, others(kindVerbs)...)
	}

	admin := editing(adminWrite)
	admin = append(admin, rule([]string{GroupMigrations}, []string{"migrationpolicies"}, read...))

	edit := editing(write)
	edit = append(edit,
		rule([]string{GroupKubeVirt}, []string{"kubevirts"}, "get", "list"),
		rule([]string{GroupMigrations}, []string{"migrationpolicies"}, read...))

	view := []rbacv1.PolicyRule{
		rule(sub, append([]string{"virtualmachines/expand-spec"}, vmiReads...), "get"),
		rule(sub, []string{"expand-vm-spec"}, "update"),
		rule([]string{GroupKubeVirt}, kinds, read...),
		rule([]string{GroupKubeVirt}, scale, "get"),
	}
	view = append(view, others(read)...)
	view = append(view, rule([]string{GroupMigrations}, []string{"migrationpolicies"}, read...))

	return []rbacv1.ClusterRole{
		clusterRole(KubeVirtDefault, nil, rule(sub, []string{"version", "guestfs"}, "get", "list")),
		clusterRole(KubeVirtAdmin, map[string]string{AggregateToAdmin: "true"}, admin...),
		clusterRole(KubeVirtEdit, map[string]string{AggregateToEdit: "true"}, edit...),
		clusterRole(KubeVirtView, map[string]string{AggregateToView: "true"}, view...),
		clusterRole(InstancetypeView, nil, rule([]string{GroupInstancetype},
			[]string{"virtualmachineclusterinstancetypes", "virtualmachineclusterpreferences"}, read...)),
	}
}
