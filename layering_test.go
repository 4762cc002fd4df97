package virtkit_test

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dataPlane are the packages that run on a host or serve the API: they
// meet the control plane only on the objects in the store, never by
// importing it. A trailing "/..." includes the subpackages.
var dataPlane = []string{"node", "cdi/...", "apiserver/...", "domain", "hypervisor/..."}

// controlPlane are the packages the data plane must not import, directly
// or through another package of the module.
var controlPlane = []string{"controller/...", "cluster/...", "scheduler/..."}

// TestDataPlaneDoesNotImportControlPlane keeps the layering: node agents,
// the importer, the API server, the domain builder and the hypervisors
// run on packages reconcile, actions, events and tracing and on the
// protocol in the root package, never on controller, cluster or
// scheduler. Test files are not checked (end-to-end tests of a node agent
// may run the controllers beside it).
func TestDataPlaneDoesNotImportControlPlane(t *testing.T) {
	graph := moduleImports(t)
	require.Contains(t, graph, "node", "the walk found no package node: is it rooted at the module?")
	require.Contains(t, graph["controller"], "reconcile", "the walk did not see controller's imports")

	checked := 0
	for pkg := range graph {
		if !matchesAny(pkg, dataPlane) {
			continue
		}
		checked++
		if chain := importChain(graph, pkg, func(p string) bool { return matchesAny(p, controlPlane) }); chain != nil {
			t.Errorf("%s imports the control plane: %s", pkg, strings.Join(chain, " -> "))
		}
	}
	assert.GreaterOrEqual(t, checked, len(dataPlane), "fewer data-plane packages than patterns")
}

// TestPrintersIsALeaf keeps the kind table's printer columns importable by
// the API server and the CLI alike: package printers imports no package of
// the module but the root.
func TestPrintersIsALeaf(t *testing.T) {
	graph := moduleImports(t)
	require.Contains(t, graph, "printers")
	for _, imp := range graph["printers"] {
		assert.Equal(t, ".", imp, "printers imports %s", imp)
	}
}

func TestImportChain(t *testing.T) {
	graph := map[string][]string{
		"node":       {"reconcile", "store"},
		"reconcile":  {"store"},
		"apiserver":  {"actions"},
		"actions":    {"controller"},
		"controller": {"scheduler"},
		"cycle":      {"cycle2"},
		"cycle2":     {"cycle"},
	}
	bad := func(p string) bool { return matchesAny(p, controlPlane) }
	tests := []struct {
		pkg  string
		want []string
	}{
		{"node", nil},
		{"apiserver", []string{"apiserver", "actions", "controller"}},
		{"controller", []string{"controller"}},
		{"cycle", nil},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			assert.Equal(t, tt.want, importChain(graph, tt.pkg, bad))
		})
	}
	assert.True(t, matchesAny("hypervisor/sim", dataPlane))
	assert.True(t, matchesAny("hypervisor", dataPlane))
	assert.False(t, matchesAny("hypervisortest", dataPlane))
	assert.True(t, matchesAny("scheduler/plugins/fit", controlPlane))
}

// importChain returns a path of imports from pkg to a package bad
// accepts, or nil when there is none.
func importChain(graph map[string][]string, pkg string, bad func(string) bool) []string {
	seen := map[string]bool{}
	var walk func(p string) []string
	walk = func(p string) []string {
		if bad(p) {
			return []string{p}
		}
		if seen[p] {
			return nil
		}
		seen[p] = true
		for _, imp := range graph[p] {
			if rest := walk(imp); rest != nil {
				return append([]string{p}, rest...)
			}
		}
		return nil
	}
	return walk(pkg)
}

// matchesAny reports whether pkg (a path relative to the module root)
// matches one of patterns ("dir" or "dir/...").
func matchesAny(pkg string, patterns []string) bool {
	for _, p := range patterns {
		if base, ok := strings.CutSuffix(p, "/..."); ok {
			if pkg == base || strings.HasPrefix(pkg, base+"/") {
				return true
			}
		} else if pkg == p {
			return true
		}
	}
	return false
}

// moduleImports maps every package of the module (by its directory
// relative to the module root, "." for the root) to the module packages
// its non-test files import, whatever their build constraints (the cgo
// and !cgo variants both count). Files constrained to "ignore" are
// skipped.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	module := modulePath(t)
	graph := map[string][]string{}
	fset := token.NewFileSet()
	for _, file := range repoFiles(t) {
		if !strings.HasSuffix(file, ".go") || strings.HasSuffix(file, "_test.go") || inTestdata(file) {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.ImportsOnly|parser.ParseComments)
		require.NoError(t, err, file)
		if buildIgnored(f.Comments, f.Package) {
			continue
		}
		pkg := filepath.ToSlash(filepath.Dir(file))
		if _, ok := graph[pkg]; !ok {
			graph[pkg] = nil
		}
		for _, spec := range f.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			require.NoError(t, err, file)
			var rel string
			switch {
			case imp == module:
				rel = "."
			case strings.HasPrefix(imp, module+"/"):
				rel = strings.TrimPrefix(imp, module+"/")
			default:
				continue
			}
			if !slices.Contains(graph[pkg], rel) {
				graph[pkg] = append(graph[pkg], rel)
			}
		}
	}
	return graph
}

func inTestdata(file string) bool {
	return slices.Contains(strings.Split(filepath.ToSlash(file), "/"), "testdata")
}

// buildIgnored reports whether the file carries "//go:build ignore"
// before its package clause.
func buildIgnored(comments []*ast.CommentGroup, pkgPos token.Pos) bool {
	for _, cg := range comments {
		if cg.Pos() >= pkgPos {
			break
		}
		for _, c := range cg.List {
			if strings.TrimSpace(c.Text) == "//go:build ignore" {
				return true
			}
		}
	}
	return false
}

// modulePath reads the module path from go.mod.
func modulePath(t *testing.T) string {
	t.Helper()
	f, err := os.Open("go.mod")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return path.Clean(strings.Trim(strings.TrimSpace(m), `"`))
		}
	}
	require.NoError(t, sc.Err())
	t.Fatal("go.mod has no module line")
	return ""
}
