package kube_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube/kubetest"
)

// Mapping takes the server's names and the names virtkit's CLI has always
// accepted besides them.
func TestMapping(t *testing.T) {
	c := kubetest.Serve(t, kubetest.NewMemory(t))
	for typed, want := range map[string]string{
		"vm":          "virtualmachines",
		"vmim":        "virtualmachineinstancemigrations",
		"migrations":  "virtualmachineinstancemigrations",
		"migration":   "virtualmachineinstancemigrations",
		"replicasets": "virtualmachineinstancereplicasets",
		"rs":          "virtualmachineinstancereplicasets",
		"cm":          "configmaps",
	} {
		m, err := c.Mapping(typed)
		require.NoError(t, err, typed)
		assert.Equal(t, want, m.Resource.Resource, typed)
	}
	_, err := c.Mapping("nope")
	assert.EqualError(t, err, `the server doesn't have a resource type "nope"`)
}
