package node

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRetargetOwner(t *testing.T) {
	const kv = `<kubevirt xmlns="http://kubevirt.io">`
	tests := []struct {
		name, in, want string
		err            error
	}{
		{
			name: "node replaced, the rest kept byte for byte",
			in:   `<domain type="kvm"><name>a_b</name><metadata>` + kv + `<uid>u</uid><node>node-1</node></kubevirt></metadata><devices/></domain>`,
			want: `<domain type="kvm"><name>a_b</name><metadata>` + kv + `<uid>u</uid><node>node-2</node></kubevirt></metadata><devices/></domain>`,
		},
		{
			name: "node added where the metadata names none",
			in:   `<domain><metadata>` + kv + `<uid>u</uid></kubevirt></metadata></domain>`,
			want: `<domain><metadata>` + kv + `<uid>u</uid><node>node-2</node></kubevirt></metadata></domain>`,
		},
		{
			name: "other metadata and a node element elsewhere untouched",
			in:   `<domain><metadata><x:node xmlns:x="urn:x">n</x:node>` + kv + `<node>node-1</node></kubevirt></metadata><node>keep</node></domain>`,
			want: `<domain><metadata><x:node xmlns:x="urn:x">n</x:node>` + kv + `<node>node-2</node></kubevirt></metadata><node>keep</node></domain>`,
		},
		{
			name: "no virtkit metadata",
			in:   `<domain><metadata><kubevirt xmlns="urn:other"><node>n</node></kubevirt></metadata></domain>`,
			err:  errNoVirtkitMetadata,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := retargetOwner(tt.in, "node-2")
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestRetargetOwnerEscapes(t *testing.T) {
	got, err := retargetOwner(`<domain><metadata><kubevirt xmlns="http://kubevirt.io"><node>a</node></kubevirt></metadata></domain>`, "a<b")
	require.NoError(t, err)
	assert.Contains(t, got, "<node>a&lt;b</node>")
}
