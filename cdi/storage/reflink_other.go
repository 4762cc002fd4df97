//go:build !linux

package storage

import (
	"errors"
	"os"
)

// reflink is Linux's FICLONE; elsewhere the caller copies.
func reflink(_, _ *os.File) error { return errors.New("reflink: not supported on this platform") }
