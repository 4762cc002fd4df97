package virtkit_test

import (
	"bufio"
	"bytes"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// userFacingBans are what must not show in the repository's text (docs,
// comments, scripts, test data): references into notes a user does not
// have, and paths outside the repository that a user's clone lacks. The
// patterns are written so that this file does not match them itself.
var userFacingBans = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`\x{00A7}`), "section mark of a reference users do not have; say what the reference says"},
	{regexp.MustCompile(`(?i)\b[i]ssue ?#?[0-9]`), "internal issue number"},
	{regexp.MustCompile(`(?i)\b[s]eed 00[0-9]`), "internal seed name"},
	{regexp.MustCompile(`\.\./(\.\./)*[s]hared/`), "path outside the repository (vendor the data under testdata/)"},
	{regexp.MustCompile(`/work/[s]hared`), "path outside the repository (vendor the data under testdata/)"},
	{regexp.MustCompile(`\b([D]ESIGN|[R]EAL-STACK|[m]igration-physics|[k]ubevirt-semantics|[s]tyle-anchors)\b`), "internal note users do not have; say what it says"},
}

var textExts = map[string]bool{".go": true, ".md": true, ".sh": true, ".yaml": true, ".yml": true, ".txt": true, ".json": true}

// TestUserFacingText keeps the repository's text free of references a user
// cannot follow: every text file is scanned for userFacingBans.
func TestUserFacingText(t *testing.T) {
	files := repoFiles(t)
	require.NotEmpty(t, files)
	for _, path := range files {
		if !textExts[filepath.Ext(path)] {
			continue
		}
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for line := 1; sc.Scan(); line++ {
			for _, b := range userFacingBans {
				if m := b.re.FindString(sc.Text()); m != "" {
					t.Errorf("%s:%d: %q: %s", path, line, m, b.why)
				}
			}
		}
		require.NoError(t, sc.Err(), path)
	}
}

// TestPackageDocsHaveNoGeneratorMarkers checks that no package's doc
// comment (what pkg.go.dev shows first) carries a code-generator marker
// such as +kubebuilder or +k8s: such markers go in a comment separated from
// the package clause by a blank line.
func TestPackageDocsHaveNoGeneratorMarkers(t *testing.T) {
	marker := regexp.MustCompile(`(?m)^\s*\+(kubebuilder|k8s|groupName|genclient)`)
	fset := token.NewFileSet()
	docs := 0
	for _, path := range repoFiles(t) {
		if !strings.HasSuffix(path, ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.PackageClauseOnly|parser.ParseComments)
		require.NoError(t, err, path)
		if f.Doc == nil {
			continue
		}
		docs++
		// Text() drops directives (//go:build ...) but keeps markers.
		assert.False(t, marker.MatchString(f.Doc.Text()), "%s: generator marker in the package doc comment:\n%s", path, f.Doc.Text())
	}
	assert.NotZero(t, docs, "no package doc comment found: is the walk rooted at the module?")
}

// repoFiles lists the repository's files (the test runs in the module
// root), leaving out VCS metadata, build output and hidden directories.
func repoFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || path == "build") {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			files = append(files, path)
		}
		return nil
	})
	require.NoError(t, err)
	return files
}
