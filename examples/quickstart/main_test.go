package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestQuickstart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, &out))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Equal(t, []string{
		"vm/hello: Stopped", "vm/hello: Running", "vm/hello: Paused",
		"vm/hello: Running", "vm/hello: Stopped", "vm/hello: Running",
	}, lines[:6])
	require.Regexp(t, `^vmi/hello runs on node-[12]$`, lines[6])
}
