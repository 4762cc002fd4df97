package export

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/virtkit/virtkit"
)

// Errors of the export server.
var (
	// ErrNotRaw: the volume's file is not a raw disk image (a qcow2 file).
	ErrNotRaw = errors.New("volume is not a raw disk image")
	// ErrPathNotAllowed: the volume's file lies outside the allowed
	// directories, or is not a regular file.
	ErrPathNotAllowed = errors.New("volume path not allowed")
	// errInvalidOptions wraps every configuration error of this package;
	// it matches virtkit.ErrInvalidOptions.
	errInvalidOptions = virtkit.InvalidOptions("export server")
)

// qcow2Magic starts every qcow2 image ("QFI\xfb").
var qcow2Magic = []byte{'Q', 'F', 'I', 0xfb}

// Volume is one exported volume: its name in the URLs and the file
// holding its raw disk image.
type Volume struct {
	// Name is the volume's name in the URLs: a DNS label-like name
	// without '/'.
	Name string
	// Path is the disk image file.
	Path string
}

// checkVolume verifies that v's file is a regular raw image under one of
// allowed (absolute, cleaned directories), and returns its resolved path.
func checkVolume(v Volume, allowed []string) (string, error) {
	if v.Name == "" || strings.ContainsAny(v.Name, "/\\") || v.Name == "." || v.Name == ".." {
		return "", fmt.Errorf("volume name %q: %w", v.Name, errInvalidOptions)
	}
	if !filepath.IsAbs(v.Path) {
		return "", fmt.Errorf("volume %s: path %q is not absolute: %w", v.Name, v.Path, ErrPathNotAllowed)
	}
	real, err := filepath.EvalSymlinks(v.Path)
	if err != nil {
		return "", fmt.Errorf("volume %s: %w", v.Name, err)
	}
	if !within(real, allowed) {
		return "", fmt.Errorf("volume %s: %s is outside the allowed directories: %w", v.Name, real, ErrPathNotAllowed)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("volume %s: %w", v.Name, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("volume %s: %s is not a regular file: %w", v.Name, real, ErrPathNotAllowed)
	}
	f, err := os.Open(real)
	if err != nil {
		return "", fmt.Errorf("volume %s: %w", v.Name, err)
	}
	defer f.Close()
	if err := checkRaw(f); err != nil {
		return "", fmt.Errorf("volume %s (%s): %w", v.Name, real, err)
	}
	return real, nil
}

// checkRaw refuses a file that starts with qcow2's magic.
func checkRaw(r io.ReaderAt) error {
	head := make([]byte, len(qcow2Magic))
	n, err := r.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if n == len(head) && bytes.Equal(head, qcow2Magic) {
		return fmt.Errorf("%w: it is a qcow2 image; only raw images are exported", ErrNotRaw)
	}
	return nil
}

// within reports whether path is one of dirs or below one of them. Both
// are absolute and have their symbolic links resolved.
func within(path string, dirs []string) bool {
	for _, d := range dirs {
		rel, err := filepath.Rel(d, path)
		if err != nil {
			continue
		}
		if rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			return true
		}
	}
	return false
}

// resolveDirs cleans the allowed directories and resolves their links
// (a directory that does not exist yet is kept as cleaned).
func resolveDirs(dirs []string) ([]string, error) {
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("allowed directory %q is not absolute: %w", d, errInvalidOptions)
		}
		if r, err := filepath.EvalSymlinks(d); err == nil {
			d = r
		}
		out = append(out, filepath.Clean(d))
	}
	return out, nil
}
