package storage

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// copyChunk is how much CopyFile moves per step (and checks ctx between).
const copyChunk = 1 << 20

// CopyFile copies the disk image src to dst for a snapshot or a restore:
// a reflink (the filesystem shares the blocks, copy-on-write) where the
// filesystem offers one, else a copy that keeps holes (all-zero chunks
// are skipped, so a sparse image stays sparse). dst appears complete or
// not at all: the data goes to a temporary file renamed into place. ctx
// is checked between chunks.
func CopyFile(ctx context.Context, src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", src)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-*")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := reflink(tmp, in); err != nil {
		if err := sparseCopy(ctx, tmp, in, info.Size()); err != nil {
			return fmt.Errorf("copy %s: %w", src, err)
		}
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return err
	}
	done = true
	return nil
}

// sparseCopy copies size bytes of in to out, seeking over all-zero chunks.
func sparseCopy(ctx context.Context, out, in *os.File, size int64) error {
	if err := out.Truncate(0); err != nil {
		return err
	}
	buf := make([]byte, copyChunk)
	zero := make([]byte, copyChunk)
	var off int64
	for off < size {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := in.ReadAt(buf, off)
		if n > 0 && !bytes.Equal(buf[:n], zero[:n]) {
			if _, werr := out.WriteAt(buf[:n], off); werr != nil {
				return werr
			}
		}
		off += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	return out.Truncate(size)
}
