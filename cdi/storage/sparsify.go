package storage

import (
	"bytes"
	"context"
	"io"
	"os"
)

// Sparsify gives the all-zero chunks of the disk image at path back to the
// filesystem (it punches holes where the filesystem can), leaving its
// content and size unchanged, and returns how many bytes it punched. A
// hypervisor's copy of a disk writes the disk's unallocated areas as
// allocated zeros (QEMU's backup job does); Sparsify makes such a copy as
// sparse as CopyFile's. ctx is checked between chunks. Where holes cannot
// be punched (another platform, a filesystem without them) it returns 0
// and no error: the image is only larger than it needs to be.
func Sparsify(ctx context.Context, path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, copyChunk)
	zero := make([]byte, copyChunk)
	var off, punched int64
	for {
		if err := ctx.Err(); err != nil {
			return punched, err
		}
		n, rerr := f.ReadAt(buf, off)
		if n == copyChunk && bytes.Equal(buf, zero) {
			ok, err := punchHole(f, off, int64(n))
			if err != nil {
				return punched, err
			}
			if !ok {
				return 0, nil
			}
			punched += int64(n)
		}
		off += int64(n)
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return punched, rerr
		}
	}
	return punched, f.Sync()
}
