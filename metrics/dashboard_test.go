package metrics

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// familyNames returns every metric name the collectors can export.
func familyNames() map[string]bool {
	names := map[string]bool{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() {
				return
			}
			// Unexported fields cannot be Interface()d; read by type.
			if v.Type() == reflect.TypeFor[*family]() {
				names[v.Elem().FieldByName("name").String()] = true
				return
			}
			walk(v.Elem())
		case reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i))
			}
		case reflect.Map:
			for _, k := range v.MapKeys() {
				walk(v.MapIndex(k))
			}
		}
	}
	walk(reflect.ValueOf(newDomainFamilies()))
	walk(reflect.ValueOf(newControlPlaneFamilies()))
	return names
}

var metricName = regexp.MustCompile(`\b(?:kubevirt|virtkit)_[a-z0-9_]+`)

func TestGrafanaDashboard(t *testing.T) {
	raw, err := os.ReadFile("../examples/grafana/virtkit-dashboard.json")
	require.NoError(t, err)
	var dash struct {
		Inputs []struct {
			Name string `json:"name"`
		} `json:"__inputs"`
		UID    string `json:"uid"`
		Title  string `json:"title"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name string `json:"name"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash))
	require.NotEmpty(t, dash.UID)
	require.NotEmpty(t, dash.Title)

	known := familyNames()
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			require.NotEmpty(t, tg.Expr, "panel %q", p.Title)
			for _, m := range metricName.FindAllString(tg.Expr, -1) {
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count")
				assert.True(t, known[base], "panel %q queries %s, which virtkit does not export", p.Title, m)
				used[base] = true
			}
		}
	}
	// What the dashboard is for: phases, CPU, memory, network, migrations.
	for _, m := range []string{
		"kubevirt_vmi_info", "kubevirt_vm_info", "kubevirt_vmi_cpu_usage_seconds_total", "kubevirt_vmi_memory_resident_bytes",
		"kubevirt_vmi_network_receive_bytes_total", "kubevirt_vmi_migration_data_remaining_bytes",
		"kubevirt_vmi_migration_memory_transfer_rate_bytes", "virtkit_migration_measured_dirty_rate_bytes_per_second",
		"virtkit_migration_predicted_total_seconds",
	} {
		assert.True(t, used[m], "no panel shows %s", m)
	}
	var vars []string
	for _, v := range dash.Templating.List {
		vars = append(vars, v.Name)
	}
	assert.Subset(t, vars, []string{"datasource", "namespace", "name"})

	// Data sources are consistent: every ${...} is a variable, an input
	// or Grafana's own, and every declared input is used by the panels.
	refs := map[string]bool{}
	for _, m := range dashboardRef.FindAllStringSubmatch(string(raw), -1) {
		refs[m[1]] = true
	}
	var panels struct {
		Panels json.RawMessage `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &panels))
	panelRefs := map[string]bool{}
	for _, m := range dashboardRef.FindAllStringSubmatch(string(panels.Panels), -1) {
		panelRefs[m[1]] = true
	}
	declared := map[string]bool{}
	for _, v := range vars {
		declared[v] = true
	}
	for _, in := range dash.Inputs {
		declared[in.Name] = true
		assert.True(t, panelRefs[in.Name], "__inputs declares %s, which no panel uses", in.Name)
	}
	for r := range refs {
		assert.True(t, declared[r] || strings.HasPrefix(r, "__"), "the dashboard references ${%s}, which is neither a variable nor an input", r)
	}
}

// dashboardRef matches Grafana variable references, $name and ${name}.
var dashboardRef = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)
