package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCustomScheduler(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, &out))
	require.Equal(t, "vmi-0 (tier gold) -> node-gold\n"+
		"vmi-1 (tier bronze) -> node-a\n"+
		"vmi-2 (tier bronze) -> node-a\n"+
		"vmi-3 (tier gold) -> node-gold\n", out.String())
}
