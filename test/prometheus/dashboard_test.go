//go:build prometheus

package prometheus

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// panelQuery is one target of a dashboard panel.
type panelQuery struct {
	dashboard, panel, refID string
	expr                    string // with the template variables substituted
}

func (q panelQuery) String() string {
	return fmt.Sprintf("%s: panel %q target %s: %s", q.dashboard, q.panel, q.refID, q.expr)
}

type grafanaPanel struct {
	Title   string `json:"title"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"` // a row's panels
}

type grafanaDashboard struct {
	Panels     []grafanaPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name     string `json:"name"`
			Type     string `json:"type"`
			AllValue string `json:"allValue"`
		} `json:"list"`
	} `json:"templating"`
}

// varRef matches $name, ${name} and ${name:format}.
var varRef = regexp.MustCompile(`\$(?:\{(\w+)(?::\w+)?\}|(\w+))`)

// dashboardQueries returns every target expression of the dashboards
// matching glob, with the query variables set to their "All" value and
// Grafana's interval variables to rateInterval.
func dashboardQueries(t *testing.T, glob, rateInterval string) []panelQuery {
	t.Helper()
	files, err := filepath.Glob(glob)
	require.NoError(t, err)
	require.NotEmpty(t, files, "no dashboard matches %s", glob)
	sort.Strings(files)
	var out []panelQuery
	for _, file := range files {
		raw, err := os.ReadFile(file)
		require.NoError(t, err)
		var d grafanaDashboard
		require.NoError(t, json.Unmarshal(raw, &d), file)
		values := map[string]string{
			"__rate_interval": rateInterval, "__interval": rateInterval, "__range": rateInterval,
		}
		for _, v := range d.Templating.List {
			if v.Type == "query" || v.Type == "custom" {
				all := v.AllValue
				if all == "" {
					all = ".*"
				}
				values[v.Name] = all
			}
		}
		var walk func([]grafanaPanel)
		walk = func(panels []grafanaPanel) {
			for _, p := range panels {
				for _, tg := range p.Targets {
					if tg.Expr == "" {
						continue
					}
					expr := varRef.ReplaceAllStringFunc(tg.Expr, func(ref string) string {
						m := varRef.FindStringSubmatch(ref)
						name := m[1] + m[2]
						v, ok := values[name]
						if !ok {
							t.Errorf("%s: panel %q: unknown variable %s", file, p.Title, ref)
							return ref
						}
						return v
					})
					out = append(out, panelQuery{dashboard: filepath.Base(file), panel: p.Title, refID: tg.RefID, expr: expr})
				}
				walk(p.Panels)
			}
		}
		walk(d.Panels)
	}
	return out
}
