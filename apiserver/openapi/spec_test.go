package openapi_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver/openapi"
)

// specs builds the v2 definitions and v3 component schemas of every kind
// the way the generic API server does: the canonical Go type name of each
// kind's sample object, expanded with its dependencies.
type specs struct {
	scheme *runtime.Scheme
	kinds  []servedKind
	v2     map[string]*spec.Schema
	v3     map[string]*spec.Schema
}

func buildSpecs(t *testing.T) specs {
	t.Helper()
	scheme, kinds := newScheme(t)
	v2cfg, v3cfg := openapi.Config(scheme)
	var names []string
	for _, k := range kinds {
		names = append(names, util.GetCanonicalTypeName(k.obj))
	}
	sw, err := builder.BuildOpenAPIDefinitionsForResources(v2cfg, names...)
	require.NoError(t, err)
	v2 := map[string]*spec.Schema{}
	for name, s := range sw.Definitions {
		v2[name] = &s
	}
	v3, err := builder3.BuildOpenAPIDefinitionsForResources(v3cfg, names...)
	require.NoError(t, err)
	return specs{scheme: scheme, kinds: kinds, v2: v2, v3: v3}
}

func TestConfigInfo(t *testing.T) {
	scheme, _ := newScheme(t)
	v2, v3 := openapi.Config(scheme)
	for _, info := range []*spec.Info{v2.Info, v3.Info} {
		assert.Equal(t, "virtkit", info.Title)
		assert.Equal(t, openapi.Version(), info.Version)
		assert.NotEmpty(t, info.Version)
	}
	assert.NotEmpty(t, v3.Definitions, "the v3 config carries its definitions")
}

// TestSpecReferencesResolve walks every schema of both documents: each
// $ref names a schema of the same document, and no definition name is a
// Go import path.
func TestSpecReferencesResolve(t *testing.T) {
	s := buildSpecs(t)
	for _, tc := range []struct {
		name   string
		defs   map[string]*spec.Schema
		prefix string
	}{
		{"v2", s.v2, "#/definitions/"},
		{"v3", s.v3, "#/components/schemas/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Greater(t, len(tc.defs), 100)
			for name, d := range tc.defs {
				assert.NotContains(t, name, "/", "definition name is a Go import path")
				walkSchema(d, func(ref string) {
					target, ok := strings.CutPrefix(ref, tc.prefix)
					if assert.True(t, ok, "%s: reference %s", name, ref) {
						_, ok := tc.defs[strings.ReplaceAll(target, "~1", "/")]
						assert.True(t, ok, "%s: dangling reference %s", name, ref)
					}
				})
			}
		})
	}
}

func walkSchema(s *spec.Schema, ref func(string)) {
	if s == nil {
		return
	}
	if r := s.Ref.String(); r != "" {
		ref(r)
	}
	for _, p := range s.Properties {
		walkSchema(&p, ref)
	}
	for i := range s.AllOf {
		walkSchema(&s.AllOf[i], ref)
	}
	for i := range s.OneOf {
		walkSchema(&s.OneOf[i], ref)
	}
	for i := range s.AnyOf {
		walkSchema(&s.AnyOf[i], ref)
	}
	if s.Items != nil {
		walkSchema(s.Items.Schema, ref)
		for i := range s.Items.Schemas {
			walkSchema(&s.Items.Schemas[i], ref)
		}
	}
	if s.AdditionalProperties != nil {
		walkSchema(s.AdditionalProperties.Schema, ref)
	}
}

// definitionName is the name the scheme gives a kind's definition.
func definitionName(t *testing.T, s *runtime.Scheme, gvk schema.GroupVersionKind) string {
	t.Helper()
	name, err := s.ToOpenAPIDefinitionName(gvk)
	require.NoError(t, err)
	return name
}

// TestGroupVersionKindExtension: every served kind's definition carries
// its group, version and kind, which is how kubectl explain and the
// server-side apply type converter find it.
func TestGroupVersionKindExtension(t *testing.T) {
	s := buildSpecs(t)
	for _, k := range s.kinds {
		name := definitionName(t, s.scheme, k.gvk)
		for doc, defs := range map[string]map[string]*spec.Schema{"v2": s.v2, "v3": s.v3} {
			d, ok := defs[name]
			if !assert.True(t, ok, "%s: %s has no definition %s", doc, k.gvk, name) {
				continue
			}
			assert.Contains(t, gvkExtension(d), k.gvk, "%s: %s", doc, name)
		}
	}
}

func gvkExtension(s *spec.Schema) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	ext, _ := s.Extensions["x-kubernetes-group-version-kind"].([]any)
	for _, e := range ext {
		switch m := e.(type) {
		case map[string]any:
			out = append(out, schema.GroupVersionKind{Group: m["group"].(string), Version: m["version"].(string), Kind: m["kind"].(string)})
		case map[string]string:
			out = append(out, schema.GroupVersionKind{Group: m["group"], Version: m["version"], Kind: m["kind"]})
		}
	}
	return out
}

// resolve follows a field path (a name per step; "[]" steps into a list's
// items) from a definition, through references, and returns the schema of
// each step.
func resolve(t *testing.T, defs map[string]*spec.Schema, prefix, from string, path ...string) []*spec.Schema {
	t.Helper()
	cur, ok := defs[from]
	require.True(t, ok, "no definition %s", from)
	deref := func(s *spec.Schema) *spec.Schema {
		for range 8 {
			r := s.Ref.String()
			if r == "" && len(s.AllOf) == 1 {
				r = s.AllOf[0].Ref.String()
			}
			if r == "" {
				return s
			}
			next, ok := defs[strings.TrimPrefix(r, prefix)]
			require.True(t, ok, "dangling reference %s", r)
			s = next
		}
		t.Fatalf("reference loop at %s", from)
		return nil
	}
	var out []*spec.Schema
	for i, step := range path {
		cur = deref(cur)
		if step == "[]" {
			require.NotNil(t, cur.Items, "%s: %s is not a list", from, strings.Join(path[:i], "."))
			cur = cur.Items.Schema
		} else {
			p, ok := cur.Properties[step]
			require.True(t, ok, "%s: no field %s", from, strings.Join(path[:i+1], "."))
			cur = &p
		}
		out = append(out, cur)
	}
	return out
}

// TestSchemaDepth follows virtkit's kinds down to leaf fields in both
// documents and checks each leaf has a type and a description from the Go
// doc comments.
func TestSchemaDepth(t *testing.T) {
	s := buildSpecs(t)
	vm := definitionName(t, s.scheme, virtkit.SchemeGroupVersion.WithKind(virtkit.KindVirtualMachine))
	vmi := definitionName(t, s.scheme, virtkit.SchemeGroupVersion.WithKind(virtkit.KindVirtualMachineInstance))
	mig := definitionName(t, s.scheme, virtkit.SchemeGroupVersion.WithKind(virtkit.KindVirtualMachineInstanceMigration))
	tests := []struct {
		from string
		path string
		typ  string
	}{
		{vm, "spec.template.spec.domain.devices.disks.[].disk.bus", "string"},
		{vm, "spec.runStrategy", "string"},
		{vm, "spec.template.spec.domain.devices.interfaces.[].name", "string"},
		{vm, "spec.template.spec.networks.[].name", "string"},
		{vm, "spec.template.spec.volumes.[].name", "string"},
		{vm, "spec.template.spec.domain.cpu.sockets", "integer"},
		{vm, "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.[].matchExpressions.[].operator", "string"},
		{vm, "status.printableStatus", "string"},
		{vmi, "status.phase", "string"},
		{vmi, "status.nodeName", "string"},
		{vmi, "spec.domain.cpu.cores", "integer"},
		{mig, "spec.vmiName", "string"},
	}
	for _, tc := range tests {
		for doc, defs := range map[string]struct {
			defs   map[string]*spec.Schema
			prefix string
		}{"v2": {s.v2, "#/definitions/"}, "v3": {s.v3, "#/components/schemas/"}} {
			t.Run(doc+"/"+tc.path, func(t *testing.T) {
				steps := resolve(t, defs.defs, defs.prefix, tc.from, strings.Split(tc.path, ".")...)
				leaf := steps[len(steps)-1]
				assert.Equal(t, []string{tc.typ}, []string(leaf.Type))
				assert.NotEmpty(t, leaf.Description, "%s has no description", tc.path)
			})
		}
	}
}

// TestListTypes checks the list semantics server-side apply merges by:
// KubeVirt leaves disks, interfaces, networks and volumes unmarked (atomic
// lists), marks filesystems and phase transitions atomic, and the copies
// of Kubernetes types keep Kubernetes' markers.
func TestListTypes(t *testing.T) {
	s := buildSpecs(t)
	vm := definitionName(t, s.scheme, virtkit.SchemeGroupVersion.WithKind(virtkit.KindVirtualMachine))
	vmi := definitionName(t, s.scheme, virtkit.SchemeGroupVersion.WithKind(virtkit.KindVirtualMachineInstance))
	tests := []struct {
		from     string
		path     string
		listType string
	}{
		{vm, "spec.template.spec.domain.devices.disks", ""},
		{vm, "spec.template.spec.domain.devices.interfaces", ""},
		{vm, "spec.template.spec.networks", ""},
		{vm, "spec.template.spec.volumes", ""},
		{vm, "spec.template.spec.domain.devices.filesystems", "atomic"},
		{vmi, "status.phaseTransitionTimestamps", "atomic"},
		{vmi, "status.volumeStatus", "atomic"},
		{vmi, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", "atomic"},
		{vmi, "spec.dnsConfig.nameservers", "atomic"},
		{vm, "metadata.ownerReferences", "map"},
		{vm, "metadata.finalizers", "set"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			steps := resolve(t, s.v3, "#/components/schemas/", tc.from, strings.Split(tc.path, ".")...)
			got, _ := steps[len(steps)-1].Extensions.GetString("x-kubernetes-list-type")
			assert.Equal(t, tc.listType, got)
		})
	}
}

// TestTypeConverter builds the server-side apply type converter from each
// document, as the generic API server does, and converts an empty object
// of every kind and every KubeVirt manifest under testdata in their
// unstructured form: a schema that lacks a field a real object has, or a
// list marker the data breaks, fails here.
func TestTypeConverter(t *testing.T) {
	s := buildSpecs(t)
	objs := sampleObjects(t, s.kinds)
	for doc, defs := range map[string]map[string]*spec.Schema{"v2": s.v2, "v3": s.v3} {
		t.Run(doc, func(t *testing.T) {
			tc, err := managedfields.NewTypeConverter(defs, false)
			require.NoError(t, err)
			for name, obj := range objs {
				u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
				require.NoError(t, err, name)
				_, err = tc.ObjectToTyped(&unstructured.Unstructured{Object: u})
				assert.NoError(t, err, "%s", name)
			}
		})
	}
}

// TestTypeConverterTypedObjects converts the typed Go objects themselves,
// as the generic API server's field manager does for kinds with Go types:
// every kind converts, those holding a uint64 field too (their types
// marshal themselves, which structured-merge-diff reads instead).
func TestTypeConverterTypedObjects(t *testing.T) {
	s := buildSpecs(t)
	tc, err := managedfields.NewTypeConverter(s.v3, false)
	require.NoError(t, err)
	for name, obj := range sampleObjects(t, s.kinds) {
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
				}
			}()
			_, err = tc.ObjectToTyped(obj)
			return err
		}()
		assert.NoError(t, err, name)
	}
}

// sampleObjects are an empty object of every served kind, the decoded,
// defaulted KubeVirt manifests under the module's testdata and a migration
// policy with every optional number set.
func sampleObjects(t *testing.T, kinds []servedKind) map[string]runtime.Object {
	t.Helper()
	out := decodeTestdata(t)
	for _, k := range kinds {
		out[k.gvk.String()] = k.obj
	}
	downtime := uint64(300)
	policy := &virtkit.MigrationPolicy{Spec: virtkit.MigrationPolicySpec{MaxDowntimeMs: &downtime}}
	policy.SetGroupVersionKind(virtkit.MigrationsSchemeGroupVersion.WithKind(virtkit.KindMigrationPolicy))
	policy.Name = "short-downtime"
	out["MigrationPolicy with maxDowntimeMs"] = policy
	return out
}

// decodeTestdata decodes and defaults the KubeVirt manifests under the
// module's testdata.
func decodeTestdata(t *testing.T) map[string]runtime.Object {
	t.Helper()
	out := map[string]runtime.Object{}
	for _, dir := range []string{"kubevirt-docs", "kubevirt-examples"} {
		files, err := filepath.Glob(filepath.Join("..", "..", "testdata", dir, "*.yaml"))
		require.NoError(t, err)
		for _, f := range files {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			objs, err := virtkit.DecodeBytes(data)
			if err != nil {
				continue // a manifest of a feature virtkit does not model
			}
			for i, obj := range objs {
				virtkit.SetDefaults(obj)
				out[filepath.Base(f)+"#"+strconv.Itoa(i)] = obj
			}
		}
	}
	require.Greater(t, len(out), 20)
	return out
}

// TestVirtkitFieldsDescribed: every field of virtkit's own definitions has
// a description (its Go doc comment), so kubectl explain documents it.
func TestVirtkitFieldsDescribed(t *testing.T) {
	s := buildSpecs(t)
	var checked int
	for name, d := range s.v3 {
		if !strings.HasPrefix(name, "com.github.virtkit.virtkit.") {
			continue
		}
		for field, p := range d.Properties {
			checked++
			assert.NotEmpty(t, p.Description, "%s.%s has no description", name, field)
		}
	}
	assert.Greater(t, checked, 500)
}
