package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func TestYAMLOut(t *testing.T) {
	for _, tc := range []struct {
		name, value string
	}{
		{"bidi override", "evil\u202egnp.exe"},
		{"zero width", "a\u200bb"},
		{"next line", "a\u0085b"},
		{"escape and bell", "x\x1b[31m\a"},
		{"multi-line stays", "line one\nline two"},
		{"clean", "plain"},
		{"looks like a bool", "true\u202e"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := map[string]any{"metadata": map[string]any{"labels": map[string]string{"k": tc.value}}, "note": tc.value}
			data, err := yaml.Marshal(in)
			require.NoError(t, err)
			out, err := yamlOut(in)
			require.NoError(t, err)
			for _, r := range string(out) {
				if r != '\n' && r != '\t' {
					assert.False(t, unsafeRune(r), "rune %U reaches the output:\n%s", r, out)
				}
			}
			var back map[string]any
			require.NoError(t, yaml.Unmarshal(out, &back), "%s", out)
			assert.Equal(t, tc.value, back["note"], "the YAML still means the same")
			assert.Equal(t, map[string]any{"k": tc.value}, back["metadata"].(map[string]any)["labels"])
			if tc.value == "plain" {
				assert.Equal(t, data, out, "clean YAML is unchanged")
			}
		})
	}
}
