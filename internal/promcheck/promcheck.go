package promcheck

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// KubeVirtCountersWithoutTotal are KubeVirt's counters whose names lack
// the _total suffix.
var KubeVirtCountersWithoutTotal = []string{
	"kubevirt_vm_starting_status_last_transition_timestamp_seconds",
	"kubevirt_vm_running_status_last_transition_timestamp_seconds",
	"kubevirt_vm_migrating_status_last_transition_timestamp_seconds",
	"kubevirt_vm_non_running_status_last_transition_timestamp_seconds",
	"kubevirt_vm_error_status_last_transition_timestamp_seconds",
}

// copiedLabelPrefixes prefix label names that copy Kubernetes label keys.
var copiedLabelPrefixes = []string{"kubernetes_vmi_label_", "label_"}

const (
	msgTotal = `counter metrics should have "_total" suffix`
	msgCamel = `label names should be written in 'snake_case' not 'camelCase'`
)

// Check runs promtool (its path) over exposition and returns the findings
// that are not KubeVirt's own. An error means promtool could not run or
// could not parse the exposition.
func Check(ctx context.Context, promtool string, exposition []byte) ([]string, error) {
	cmd := exec.CommandContext(ctx, promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(exposition)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return nil, fmt.Errorf("running promtool: %w", err)
	}
	var findings []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			findings = append(findings, line)
		}
	}
	if err != nil && len(findings) == 0 {
		return nil, fmt.Errorf("promtool check metrics: %w", err)
	}
	return Filter(exposition, findings), nil
}

// Filter drops the findings that are KubeVirt's own names (see the
// package documentation) and returns the rest. A finding is "<metric>
// <message>", as promtool prints it.
func Filter(exposition []byte, findings []string) []string {
	var copied map[string]bool
	var out []string
	for _, f := range findings {
		name, msg, _ := strings.Cut(f, " ")
		switch msg {
		case msgTotal:
			if isKubeVirtCounter(name) {
				continue
			}
		case msgCamel:
			if copied == nil {
				copied = familiesWithOnlyCopiedCamelCase(exposition)
			}
			if copied[name] {
				continue
			}
		}
		out = append(out, f)
	}
	return out
}

func isKubeVirtCounter(name string) bool {
	for _, n := range KubeVirtCountersWithoutTotal {
		if n == name {
			return true
		}
	}
	return false
}

// familiesWithOnlyCopiedCamelCase returns the families whose series have
// camelCase label names, all of them copies of Kubernetes label keys.
func familiesWithOnlyCopiedCamelCase(exposition []byte) map[string]bool {
	ok := map[string]bool{}
	bad := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(exposition))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		brace := strings.IndexByte(line, '{')
		if brace < 0 {
			continue
		}
		family := baseName(line[:brace])
		for _, l := range labelNames(line[brace+1:]) {
			if strings.ToLower(l) == l {
				continue
			}
			if hasCopiedPrefix(l) {
				ok[family] = true
			} else {
				bad[family] = true
			}
		}
	}
	for f := range bad {
		delete(ok, f)
	}
	return ok
}

// baseName is a series name without the histogram and summary suffixes.
func baseName(s string) string {
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(s, suf); ok {
			return b
		}
	}
	return s
}

func hasCopiedPrefix(l string) bool {
	for _, p := range copiedLabelPrefixes {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// labelNames reads the label names of `a="x",b="y"}` (quoted values may
// hold escaped quotes, commas and braces).
func labelNames(s string) []string {
	var names []string
	for i := 0; i < len(s); {
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			break
		}
		names = append(names, strings.TrimSpace(strings.TrimLeft(s[i:i+eq], ",")))
		j := i + eq + 1
		if j >= len(s) || s[j] != '"' {
			break
		}
		j++
		for j < len(s) && s[j] != '"' {
			if s[j] == '\\' {
				j++
			}
			j++
		}
		j++ // closing quote
		if j < len(s) && s[j] == '}' {
			break
		}
		i = j
	}
	return names
}
