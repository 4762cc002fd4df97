//go:build libvirt && cgo

package node_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor/libvirt"
)

// The same shared-host scenario on libvirt's in-process test driver: the
// foreign domains are defined through libvirt from arbitrary XML.
func TestAgentLeavesDomainsItDoesNotOwnAloneOnLibvirtTestDriver(t *testing.T) {
	h, err := libvirt.New(context.Background(), libvirt.Options{URI: "test:///default"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	ownershipCase(t, h, "test")
}
