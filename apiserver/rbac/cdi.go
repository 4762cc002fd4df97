package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// API groups and role names of CDI's cluster roles.
const (
	GroupCDI       = "cdi.kubevirt.io"
	GroupCDIUpload = "upload.cdi.kubevirt.io"

	CDIAdmin        = "cdi.kubevirt.io:admin"
	CDIEdit         = "cdi.kubevirt.io:edit"
	CDIView         = "cdi.kubevirt.io:view"
	CDIConfigReader = "cdi.kubevirt.io:config-reader"
)

// CDIClusterRoles returns the cluster roles CDI's operator installs beside
// KubeVirt's, with the same rules: cdi.kubevirt.io:admin and :edit (every
// verb on DataVolumes and CDI's other namespaced kinds, and upload tokens,
// which is what `virtctl image-upload` asks for), cdi.kubevirt.io:view
// (reads), each aggregated into Kubernetes' admin, edit and view, and
// cdi.kubevirt.io:config-reader (CDIConfig and storage profiles), which
// [Bootstrap] binds to every authenticated user. As with CDI, a user
// bound to kubevirt.io:edit alone may not create DataVolumes: namespace
// users get both through the aggregated edit role.
func CDIClusterRoles() []rbacv1.ClusterRole {
	namespaced := []string{"datavolumes", "dataimportcrons", "datasources",
		"volumeimportsources", "volumeuploadsources", "volumeclonesources"}
	write := []rbacv1.PolicyRule{
		rule([]string{GroupCDI}, namespaced, "*"),
		rule([]string{GroupCDI}, []string{"datavolumes/source"}, "create"),
		rule([]string{GroupCDIUpload}, []string{"uploadtokenrequests"}, "*"),
	}
	view := []rbacv1.PolicyRule{
		rule([]string{GroupCDI}, append([]string{"cdiconfigs", "objecttransfers", "storageprofiles"}, namespaced...),
			"get", "list", "watch"),
		rule([]string{GroupCDI}, []string{"datavolumes/source"}, "create"),
	}
	return []rbacv1.ClusterRole{
		clusterRole(CDIAdmin, map[string]string{AggregateToAdmin: "true"}, write...),
		clusterRole(CDIEdit, map[string]string{AggregateToEdit: "true"}, write...),
		clusterRole(CDIView, map[string]string{AggregateToView: "true"}, view...),
		clusterRole(CDIConfigReader, nil,
			rule([]string{GroupCDI}, []string{"cdiconfigs", "storageprofiles"}, "get", "list", "watch")),
	}
}
