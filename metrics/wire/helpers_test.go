package wire_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/internal/promcheck"
	"github.com/virtkit/virtkit/internal/testenv"
)

// promtoolCheck fails on any promtool finding but those KubeVirt's own
// names cause (internal/promcheck).
func promtoolCheck(t *testing.T, exposition []byte) {
	t.Helper()
	promtool := testenv.LookTool(t, "promtool", "Debian prometheus")
	findings, err := promcheck.Check(context.Background(), promtool, exposition)
	require.NoError(t, err)
	assert.Empty(t, findings, "promtool findings")
}
