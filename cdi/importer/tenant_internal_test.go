package importer

import (
	"fmt"
	"io/fs"
	"net"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/virtkit/virtkit/cdi/oci"
	"github.com/virtkit/virtkit/internal/netpolicy"
)

// hostDetails are strings of the node that the errors below carry and no
// tenant may read.
var hostDetails = []string{"/var/lib/virtkit", "/etc/shadow", "/usr/bin/bwrap", "10.1.2.3", "10.0.0.5", "alice", "virtkit-node"}

// The message a tenant reads keeps what the tenant gave and what the source
// answered, and none of the node's paths, addresses or users, whatever the
// kind of failure.
func TestTenantMessage(t *testing.T) {
	scratch := "/var/lib/virtkit/scratch/ns_dv_uid/source"
	pathErr := &fs.PathError{Op: "open", Path: scratch, Err: syscall.ENOSPC}
	opErr := &net.OpError{Op: "read", Net: "tcp", Source: &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 45678},
		Addr: &net.TCPAddr{IP: net.IPv4(93, 184, 216, 34), Port: 80}, Err: syscall.ECONNRESET}
	qemuErr := fmt.Errorf("qemu-img info: exit status 1: qemu-img: Could not open 'json:{\"file\":{\"filename\":%q}}': Permission denied (user alice)", scratch)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"qemu-img stderr", fmt.Errorf("%w: %w", ErrNotADisk, qemuErr), "the source is not a disk image"},
		{"scratch write", fmt.Errorf("write %s: %w", scratch, pathErr), "the import failed on the node (the node's log has the details)"},
		{"connection reset", fmt.Errorf("%w: %w", ErrUnreachable, opErr), "the import source is unreachable"},
		{"node address", fmt.Errorf("%w: %w", ErrBadSource, fmt.Errorf("%w: 10.0.0.5: the node's addresses", netpolicy.ErrForbidden)),
			"the source's address is not one the node connects to for tenants"},
		{"host data file", fmt.Errorf("%w: qcow2 external data file (%q)", ErrExternalReference, "/etc/shadow"),
			"the image references a file outside itself (a qcow2 backing file or external data file)"},
		{"no sandbox", fmt.Errorf("importer: Options.QemuImg: %w: /usr/bin/bwrap: not found", ErrNoSandbox), "the node cannot convert images safely"},
		{"registry cache", fmt.Errorf("%w: docker://r/i: %w", oci.ErrPull, pathErr), "image pull failed (the node's log has the details)"},
		{"registry not found", fmt.Errorf("%w: docker://r/i: %w: GET http://10.0.0.5/v2/", oci.ErrPull, oci.ErrNotFound), "image not found in the registry"},
		{"clone from another node", public(fmt.Errorf("clone source ns/a lives on node virtkit-node, not n1"), "clone source %s lives on another node", "ns/a"),
			"clone source ns/a lives on another node"},
		{"http status", public(fmt.Errorf("%w: GET http://h/d: 404 Not Found", ErrBadSource), "the server answered %s", "404 Not Found"),
			"the server answered 404 Not Found"},
		{"public wrapped further", fmt.Errorf("attempt 2 in %s: %w", scratch, public(fmt.Errorf("%w: sizes", ErrTooSmall), "the requested size (1 bytes) is smaller than the image's virtual size (2 bytes)")),
			"the requested size (1 bytes) is smaller than the image's virtual size (2 bytes)"},
		{"unknown", fmt.Errorf("rename %s: %w", scratch, syscall.EXDEV), "the import failed on the node (the node's log has the details)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := TenantMessage(tt.err)
			assert.Equal(t, tt.want, got)
			for _, d := range hostDetails {
				assert.NotContains(t, got, d)
			}
		})
	}
}
