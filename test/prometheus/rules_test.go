//go:build prometheus

package prometheus

import (
	"os"
	"regexp"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// metricRef matches a metric name in a PromQL expression: KubeVirt's and
// virtkit's prefixes, recorded names (with colons) included.
var metricRef = regexp.MustCompile(`\b[a-z:]*(?:kubevirt|virtkit)_[a-z0-9_:]+`)

// ruleInputs returns the metric names the rules file's expressions read
// that are not recorded by the file itself: what virtkit must serve.
func ruleInputs(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var f struct {
		Groups []struct {
			Rules []struct {
				Record string `yaml:"record"`
				Expr   string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &f), path)
	recorded, read := map[string]bool{}, map[string]bool{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recorded[r.Record] = true
			}
			for _, name := range metricRef.FindAllString(r.Expr, -1) {
				read[name] = true
			}
		}
	}
	var out []string
	for name := range read {
		if !recorded[name] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	require.NotEmpty(t, out, "no metric read by %s", path)
	return out
}
