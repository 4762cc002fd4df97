package main

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube/kubetest"
	validatecmd "github.com/virtkit/virtkit/cmd/virtkit/internal/validate"
	"github.com/virtkit/virtkit/guestagent/qgaserver"
)

// hostile holds what a terminal must never receive raw: ESC, BEL, DEL, a
// C1 CSI, a bidi override, a zero-width joiner and an invalid byte.
const hostile = "a\x1b[31m\a\x7f\u009b\u202e\u200d\xffz"

func assertNoRawControls(t *testing.T, out string) {
	t.Helper()
	for _, bad := range []string{"\x1b", "\a", "\x7f", "\u009b", "\u202e", "\u200d", "\xff"} {
		assert.NotContains(t, out, bad, "raw %q in output:\n%s", bad, out)
	}
}

func TestEsc(t *testing.T) {
	assert.Equal(t, "plain name-1 ünïcode", esc("plain name-1 ünïcode"))
	assert.Equal(t, `a\x1b[31m\x07\x7f\u009b\u202e\u200d\xffz`, esc(hostile))
	assert.Equal(t, `tab\x09nl\x0a`, esc("tab\tnl\n"))
	assert.Equal(t, `\U000e0001`, esc("\U000E0001"))
}

func TestEscapeJSONKeepsMeaning(t *testing.T) {
	for _, s := range []string{hostile, "\U000E0001 tag", "ok", "\u2028\u2029", "line\nbreak\t"} {
		data, err := json.MarshalIndent(map[string]string{"k": s}, "", "\t")
		require.NoError(t, err)
		out := escapeJSON(data)
		assertNoRawControls(t, string(out))
		assert.NotContains(t, string(out), "\U000E0001")
		var back map[string]string
		require.NoError(t, json.Unmarshal(out, &back), "%s", out)
		assert.Equal(t, strings.ToValidUTF8(s, "\uFFFD"), back["k"])
	}
}

func TestAgentJSONEscapesControls(t *testing.T) {
	cfg := qgaserver.LinuxGuest("web-1", "52:54:00:ab:cd:ef", "10.0.0.7")
	cfg.OSInfo.Name = "Evil\u009b2J\u202eOS\x7f"
	sock := agentTestSocket(t, qgaserver.New(cfg))
	out, err := runAgentCmd(t, "osinfo", "-o", "json", "--socket", sock)
	require.NoError(t, err)
	assertNoRawControls(t, out)
	assert.Contains(t, out, `"name": "Evil\u009b2J\u202eOS\u007f"`)
}

func TestValidatePrintsNamesEscaped(t *testing.T) {
	manifest := "apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstanceMigration\n" +
		"metadata: {name: \"x\\e[31m\\a\\u202e\\x7f\\u009b\"}\nspec: {vmiName: v}\n"
	for _, output := range []string{"text", "json"} {
		out, err := runValidate(t, manifest, "-f", "-", "-o", output)
		require.Error(t, err)
		assertNoRawControls(t, out)
		assert.Contains(t, out, "metadata.name")
	}
}

func TestValidateEmptyInputs(t *testing.T) {
	for name, input := range map[string]string{
		"empty file":        "",
		"comments only":     "# nothing\n---\n",
		"empty List":        "apiVersion: v1\nkind: List\nitems: []\n",
		"nested empty List": "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: List\n  items: []\n",
		"empty JSON array":  "[]",
	} {
		t.Run(name, func(t *testing.T) {
			out, err := runValidate(t, input, "-f", "-", "-o", "json")
			require.Error(t, err, "an input without objects must not pass")
			var findings []validatecmd.Finding
			require.NoError(t, json.Unmarshal([]byte(out), &findings))
			require.Len(t, findings, 1)
			assert.Equal(t, "Empty", findings[0].Type)
			assert.Equal(t, "-", findings[0].File)
		})
	}
}

func TestValidateReportsReservedLabels(t *testing.T) {
	manifest := strings.Replace(goodVMI, "metadata: {name: good, namespace: ns}",
		"metadata: {name: good, namespace: ns, labels: {kubevirt.io/nodeName: n1}}", 1)
	out, err := runValidate(t, manifest, "-f", "-")
	require.Error(t, err)
	assert.Contains(t, out, "metadata.labels[kubevirt.io/nodeName]: Forbidden")
}

func TestGetTablesEscapeNames(t *testing.T) {
	st := kubetest.NewMemory(t)
	ctx := t.Context()
	require.NoError(t, st.Create(ctx, &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: hostile}, Status: virtkit.NodeStatus{Hypervisor: hostile}}))
	require.NoError(t, st.Create(ctx, &virtkit.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: hostile, Namespace: "default"},
		Status:     virtkit.VirtualMachineInstanceStatus{NodeName: hostile, Phase: virtkit.VirtualMachineInstancePhase(hostile)},
	}))
	api := serveAt(t, st, time.Time{})
	for _, kind := range []string{"nodes", "vmis"} {
		for _, output := range []string{"table", "json"} {
			var out bytes.Buffer
			require.NoError(t, runGet(t, api, &out, kind, "", namespaceFlags{namespace: "default"}, output))
			assertNoRawControls(t, out.String())
			if output == "table" {
				// JSON carries the name: its invalid byte arrives as U+FFFD.
				assert.Contains(t, out.String(), esc(strings.ToValidUTF8(hostile, "\uFFFD")))
			}
		}
	}
}

func TestNodeNameFlagMustBeDNSLabel(t *testing.T) {
	for _, name := range []string{"x\x1b[31m", "Upper", "a.b", strings.Repeat("a", 64)} {
		err := runNode(t.Context(), &nodeFlags{name: name}, io.Discard)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "--name")
	}
}

func TestEscLinesKeepsLineBreaks(t *testing.T) {
	assert.Equal(t, "one \\x1b[2J\ntwo", escLines("one \x1b[2J\ntwo"))
}
