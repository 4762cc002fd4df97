package node

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMaskHost(t *testing.T) {
	tests := []struct{ in, want string }{
		{"open /var/lib/virtkit/x: denied", "open <node path>: denied"},
		{"'/run/virtkit/a.sock'", "'<node path>'"},
		{"dial 10.0.0.5:5000: refused", "dial <address>: refused"},
		{"at 10.0.0.5.", "at <address>."},
		{"spec.volumes[0].name: a/b not supported", "spec.volumes[0].name: a/b not supported"},
		{"version 1.2 at :: and 8080", "version 1.2 at :: and 8080"},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			assert.Equal(t, tt.want, maskHost(tt.in))
		})
	}
}
