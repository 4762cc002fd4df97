package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cluster"
)

// bench scale --api measures each count through the library and through
// the API, and refuses the etcd store.
func TestBenchScaleAPI(t *testing.T) {
	var out bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetArgs([]string{"bench", "scale", "--vms", "6", "--nodes", "2", "--workers", "2", "--api", "--output", "json"})
	require.NoError(t, root.Execute())
	var results []cluster.ScaleResult
	require.NoError(t, json.Unmarshal(out.Bytes(), &results))
	require.Len(t, results, 2)
	assert.Equal(t, "memory", results[0].Backend)
	assert.Equal(t, backendAPI, results[1].Backend)
	for _, r := range results {
		assert.Equal(t, 6, r.VMs)
		assert.Positive(t, r.Total)
		assert.Positive(t, r.P99)
		assert.Positive(t, r.Reconciles)
	}

	out.Reset()
	root = newRootCmd()
	root.SetOut(&out)
	root.SetArgs([]string{"bench", "scale", "--vms", "4", "--nodes", "2", "--workers", "2", "--api"})
	require.NoError(t, root.Execute())
	assert.Contains(t, out.String(), "PATH")
	assert.Contains(t, out.String(), "library")
	assert.Contains(t, out.String(), "api/library total")

	root = newRootCmd()
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"bench", "scale", "--vms", "4", "--store", "etcd", "--api"})
	err := root.Execute()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--api: only with --store memory")
}
