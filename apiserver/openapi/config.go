package openapi

import (
	"runtime/debug"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	openapicommon "k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Title is the title of virtkit's OpenAPI documents.
const Title = "virtkit"

// modulePath is virtkit's module, whose version the documents carry.
const modulePath = "github.com/virtkit/virtkit"

// Config returns the OpenAPI v2 and v3 configurations of an API server
// serving the kinds registered in scheme, for
// genericapiserver.Config.OpenAPIConfig and OpenAPIV3Config. Both are
// genericapiserver's defaults over [GetOpenAPIDefinitions], titled
// [Title], versioned with virtkit's module version (see [Version]), and
// named so that every kind of the scheme carries its
// x-kubernetes-group-version-kind: definitions keyed by a Go import path
// (virtkit's own types) take the REST friendly name the scheme gives their
// kinds, github.com/virtkit/virtkit.VirtualMachine becoming
// com.github.virtkit.virtkit.VirtualMachine. The scheme must not change
// afterwards.
func Config(scheme *runtime.Scheme) (*openapicommon.Config, *openapicommon.OpenAPIV3Config) {
	namer := openapinamer.NewDefinitionNamer(scheme)
	name := func(goName string) (string, spec.Extensions) {
		if strings.Contains(goName, "/") {
			goName = util.ToRESTFriendlyName(goName)
		}
		return namer.GetDefinitionName(goName)
	}
	version := Version()

	v2 := genericapiserver.DefaultOpenAPIConfig(GetOpenAPIDefinitions, namer)
	v2.Info.Title = Title
	v2.Info.Version = version
	v2.GetDefinitionName = name

	v3 := genericapiserver.DefaultOpenAPIV3Config(GetOpenAPIDefinitions, namer)
	v3.Info.Title = Title
	v3.Info.Version = version
	v3.GetDefinitionName = name
	// DefaultOpenAPIV3Config resolved the references with the namer alone.
	v3.Definitions = GetOpenAPIDefinitions(func(goName string) spec.Ref {
		n, _ := name(goName)
		return spec.MustCreateRef("#/components/schemas/" + openapicommon.EscapeJsonPointer(n))
	})
	return v2, v3
}

// Version is the version the OpenAPI documents carry: virtkit's module
// version as the running binary recorded it (as the main module or as a
// dependency), or "devel" for a build from a work tree.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	mod := bi.Main
	for _, d := range bi.Deps {
		if d.Path == modulePath {
			mod = *d
		}
	}
	if mod.Path != modulePath || mod.Version == "" || mod.Version == "(devel)" {
		return "devel"
	}
	return mod.Version
}
