package openapi_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/util"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver/openapi"
)

// Config gives the generic API server its OpenAPI configuration; here the
// v3 definitions of VirtualMachine are built as the server builds them
// for server-side apply.
func ExampleConfig() {
	scheme := runtime.NewScheme()
	gvk := virtkit.SchemeGroupVersion.WithKind(virtkit.KindVirtualMachine)
	scheme.AddKnownTypeWithName(gvk, &virtkit.VirtualMachine{})
	scheme.AddKnownTypeWithName(gvk.GroupVersion().WithKind("VirtualMachineList"), &virtkit.VirtualMachineList{})
	metav1.AddToGroupVersion(scheme, gvk.GroupVersion())

	v2, v3 := openapi.Config(scheme) // genericapiserver.Config's OpenAPIConfig and OpenAPIV3Config
	fmt.Println(v2.Info.Title, v3.Info.Title)

	schemas, err := builder3.BuildOpenAPIDefinitionsForResources(v3, util.GetCanonicalTypeName(&virtkit.VirtualMachine{}))
	if err != nil {
		fmt.Println(err)
		return
	}
	vm := schemas["com.github.virtkit.virtkit.VirtualMachine"]
	fmt.Println(vm.Extensions["x-kubernetes-group-version-kind"])

	if _, err := managedfields.NewTypeConverter(schemas, false); err != nil {
		fmt.Println(err)
	}
	// Output:
	// virtkit virtkit
	// [map[group:kubevirt.io kind:VirtualMachine version:v1]]
}
