package importer

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// qcow2Header builds a version 3 header (104 bytes) with the given backing
// offset and incompatible features, followed by extensions.
func qcow2Header(backing, incompat uint64, exts ...[]byte) []byte {
	h := make([]byte, 104)
	copy(h, "QFI\xfb")
	be := binary.BigEndian
	be.PutUint32(h[4:], 3)
	be.PutUint64(h[8:], backing)
	be.PutUint64(h[72:], incompat)
	be.PutUint32(h[100:], 104)
	for _, e := range exts {
		h = append(h, e...)
	}
	return append(h, make([]byte, 8)...) // end of extensions
}

func qcow2Ext(typ uint32, data string) []byte {
	e := make([]byte, 8, 8+len(data)+7)
	binary.BigEndian.PutUint32(e, typ)
	binary.BigEndian.PutUint32(e[4:], uint32(len(data)))
	e = append(e, data...)
	for len(e)%8 != 0 {
		e = append(e, 0)
	}
	return e
}

func TestQcow2References(t *testing.T) {
	tests := []struct {
		name string
		hdr  []byte
		want error
	}{
		{"plain", qcow2Header(0, 0, qcow2Ext(0x6803f857, "features")), nil},
		{"backing file", qcow2Header(512, 0), ErrExternalReference},
		{"data file bit", qcow2Header(0, qcow2IncompatDataFile), ErrExternalReference},
		{"data file extension only", qcow2Header(0, 0, qcow2Ext(0x6803f857, "x"), qcow2Ext(qcow2ExtDataFile, "/etc/shadow")), ErrExternalReference},
		{"truncated", []byte("QFI\xfb\x00\x00\x00\x03"), ErrNotADisk},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := qcow2References(tt.hdr)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
		})
	}
}
