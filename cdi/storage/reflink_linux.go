//go:build linux

package storage

import (
	"os"

	"golang.org/x/sys/unix"
)

// reflink makes dst share src's blocks (FICLONE); filesystems without
// reflinks (ext4, tmpfs) return an error and the caller copies.
func reflink(dst, src *os.File) error {
	return unix.IoctlFileClone(int(dst.Fd()), int(src.Fd()))
}
