package prometheus_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/virtkit/virtkit/internal/testenv"
)

// promtool runs promtool with args in this directory and fails the test
// with its output when it does not succeed.
func promtool(t *testing.T, args ...string) {
	t.Helper()
	bin := testenv.LookTool(t, "promtool", "Debian prometheus")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	require.NoError(t, err, "promtool %v:\n%s", args, out)
}

func TestRulesCheck(t *testing.T) {
	promtool(t, "check", "rules", "virtkit-rules.yaml")
}

func TestConfigCheck(t *testing.T) {
	promtool(t, "check", "config", "prometheus.yml")
}

// TestRulesUnitTests fires and resolves every alert on virtkit-shaped
// series (virtkit-rules_test.yaml).
func TestRulesUnitTests(t *testing.T) {
	promtool(t, "test", "rules", "virtkit-rules_test.yaml")
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert  string `yaml:"alert"`
			Record string `yaml:"record"`
			Expr   string `yaml:"expr"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

type ruleTests struct {
	RuleFiles      []string `yaml:"rule_files"`
	GroupEvalOrder []string `yaml:"group_eval_order"`
	Tests          []struct {
		Name      string `yaml:"name"`
		AlertTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(raw, v), path)
}

// TestEveryAlertFiresAndResolves checks that the unit tests cover every
// alert both ways: at least one evaluation where it fires and one where
// it does not.
func TestEveryAlertFiresAndResolves(t *testing.T) {
	var rules ruleFile
	readYAML(t, "virtkit-rules.yaml", &rules)
	var tests ruleTests
	readYAML(t, "virtkit-rules_test.yaml", &tests)
	require.Equal(t, []string{"virtkit-rules.yaml"}, tests.RuleFiles)

	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, at := range tc.AlertTest {
			if len(at.ExpAlerts) > 0 {
				fires[at.Alertname] = true
			} else {
				quiet[at.Alertname] = true
			}
		}
	}
	alerts := 0
	var groups []string
	for _, g := range rules.Groups {
		groups = append(groups, g.Name)
	}
	// Without an order promtool evaluates groups in any order, and an
	// alert may read a recording rule's value of the previous evaluation.
	assert.Equal(t, groups, tests.GroupEvalOrder, "group_eval_order: every group, recording rules first")
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			assert.True(t, fires[r.Alert], "no unit test fires %s", r.Alert)
			assert.True(t, quiet[r.Alert], "no unit test shows %s resolved or quiet", r.Alert)
		}
	}
	assert.GreaterOrEqual(t, alerts, 10)
}
