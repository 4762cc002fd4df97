package domain

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// A qcow2 (version 3) image with no data clusters: header, one refcount
// table cluster, one refcount block and an all-zero L1 table. qemu-img
// check accepts it and QEMU allocates clusters on first write, so an
// emptyDisk of any capacity costs a few hundred KiB on the host.

const (
	qcow2ClusterBits = 16
	qcow2ClusterSize = 1 << qcow2ClusterBits
	qcow2Magic       = 0x514649fb
	// Each L1 entry maps one L2 table of clusterSize/8 entries.
	qcow2BytesPerL1Entry = qcow2ClusterSize * (qcow2ClusterSize / 8)
	// One 16-bit refcount block covers this many clusters.
	qcow2MaxClusters = qcow2ClusterSize / 2
	// Backing-file format name header extension.
	qcow2ExtBackingFormat = 0xe2792aca
)

// writeQcow2 writes an empty qcow2 image of virtual size bytes. When
// backingFile is set the image is an overlay of it (backingFormat raw or
// qcow2) and every unwritten cluster reads from the backing file.
func writeQcow2(w io.Writer, size uint64, backingFile, backingFormat string) error {
	if size == 0 {
		return errors.New("qcow2: virtual size must be positive")
	}
	l1Size := (size + qcow2BytesPerL1Entry - 1) / qcow2BytesPerL1Entry
	l1Clusters := (l1Size*8 + qcow2ClusterSize - 1) / qcow2ClusterSize
	clusters := 3 + l1Clusters
	if clusters > qcow2MaxClusters {
		return fmt.Errorf("qcow2: virtual size %d too large", size)
	}
	img := make([]byte, clusters*qcow2ClusterSize)
	h := img[:qcow2ClusterSize]
	be := binary.BigEndian
	be.PutUint32(h[0:], qcow2Magic)
	be.PutUint32(h[4:], 3)
	be.PutUint32(h[20:], qcow2ClusterBits)
	be.PutUint64(h[24:], size)
	be.PutUint32(h[36:], uint32(l1Size))
	be.PutUint64(h[40:], 3*qcow2ClusterSize)
	be.PutUint64(h[48:], 1*qcow2ClusterSize)
	be.PutUint32(h[56:], 1)
	be.PutUint32(h[96:], 4) // refcount_order: 16-bit refcounts
	be.PutUint32(h[100:], 104)
	off := 104
	if backingFormat != "" {
		be.PutUint32(h[off:], qcow2ExtBackingFormat)
		be.PutUint32(h[off+4:], uint32(len(backingFormat)))
		copy(h[off+8:], backingFormat)
		off += 8 + (len(backingFormat)+7)/8*8
	}
	off += 8 // end-of-extensions marker: type 0, length 0
	if backingFile != "" {
		if off+len(backingFile) > qcow2ClusterSize {
			return fmt.Errorf("qcow2: backing file name too long")
		}
		be.PutUint64(h[8:], uint64(off))
		be.PutUint32(h[16:], uint32(len(backingFile)))
		copy(h[off:], backingFile)
	}
	be.PutUint64(img[qcow2ClusterSize:], 2*qcow2ClusterSize)
	rb := img[2*qcow2ClusterSize:]
	for i := range clusters {
		be.PutUint16(rb[2*i:], 1)
	}
	_, err := w.Write(img)
	return err
}

// qcow2VirtualSize returns the virtual size recorded in a qcow2 header, or
// ok=false when hdr does not start with the qcow2 magic.
func qcow2VirtualSize(hdr []byte) (size uint64, ok bool) {
	if len(hdr) < 32 || binary.BigEndian.Uint32(hdr) != qcow2Magic {
		return 0, false
	}
	return binary.BigEndian.Uint64(hdr[24:]), true
}
