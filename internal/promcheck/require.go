package promcheck

import (
	"context"
	"testing"

	"github.com/virtkit/virtkit/internal/testenv"
)

// RequireClean runs Check with the promtool on PATH (skipping the test
// when it is absent, failing under testenv.Strict) and fails the test on
// an error or on any finding.
func RequireClean(t testing.TB, exposition []byte) {
	t.Helper()
	promtool := testenv.LookTool(t, "promtool", "Debian prometheus")
	findings, err := Check(context.Background(), promtool, exposition)
	if err != nil {
		t.Fatalf("promtool: %v", err)
	}
	if len(findings) > 0 {
		t.Errorf("promtool findings: %q", findings)
	}
}
