//go:build linux

package storage

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// punchHole deallocates [off, off+n) of f, keeping its size; ok is false
// when the filesystem has no holes to punch.
func punchHole(f *os.File, off, n int64) (ok bool, err error) {
	err = unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return false, nil
	}
	return err == nil, err
}
