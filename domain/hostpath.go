package domain

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrHostPathDenied is wrapped by every refusal of the host-path policy.
var ErrHostPathDenied = errors.New("host path not allowed by the node's host-path policy")

// maxSymlinkChecks bounds the existing-prefix walk of CheckHostPath.
const maxSymlinkChecks = 255

// HostPathPolicy says which host paths a manifest may name (hostDisk). The
// zero value allows nothing: an operator opts in per prefix, the way
// KubeVirt puts HostDisk behind a feature gate.
type HostPathPolicy struct {
	// Allow lists absolute path prefixes (directories or single files). A
	// path is allowed when, cleaned and with every symlink of its longest
	// existing prefix resolved, it equals one of them or lies below one;
	// the prefixes are resolved the same way.
	Allow []string
}

// String describes the policy for error messages.
func (p HostPathPolicy) String() string {
	if len(p.Allow) == 0 {
		return "allow-host-path: none allowed"
	}
	return "allow-host-path: " + strings.Join(p.Allow, ", ")
}

// Check returns the path to use: cleaned and resolved. It refuses a path
// that is relative, not in clean form, or outside every allowed prefix
// after symlink resolution; the error wraps ErrHostPathDenied and names the
// policy.
func (p HostPathPolicy) Check(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("%q is not an absolute path: %w (%s)", path, ErrHostPathDenied, p)
	}
	if filepath.Clean(path) != path {
		return "", fmt.Errorf("%q is not in clean form (want %q): %w (%s)", path, filepath.Clean(path), ErrHostPathDenied, p)
	}
	if len(p.Allow) == 0 {
		return "", fmt.Errorf("%s: %w (%s)", path, ErrHostPathDenied, p)
	}
	resolved, err := resolveExistingPrefix(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w: %w (%s)", path, ErrHostPathDenied, err, p)
	}
	for _, a := range p.Allow {
		if !filepath.IsAbs(a) {
			continue
		}
		ra, err := resolveExistingPrefix(filepath.Clean(a))
		if err != nil {
			continue
		}
		if within(resolved, ra) {
			return resolved, nil
		}
	}
	if resolved != path {
		return "", fmt.Errorf("%s (resolves to %s): %w (%s)", path, resolved, ErrHostPathDenied, p)
	}
	return "", fmt.Errorf("%s: %w (%s)", path, ErrHostPathDenied, p)
}

// within reports whether p is prefix or below it.
func within(p, prefix string) bool {
	if prefix == "/" {
		return true
	}
	return p == prefix || strings.HasPrefix(p, prefix+string(filepath.Separator))
}

// resolveExistingPrefix resolves the symlinks of the longest existing
// prefix of the clean absolute path p and appends the rest.
func resolveExistingPrefix(p string) (string, error) {
	head, tail := p, ""
	for range maxSymlinkChecks {
		r, err := filepath.EvalSymlinks(head)
		if err == nil {
			return filepath.Join(r, tail), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if head == "/" {
			break
		}
		// A dangling symlink at head would be followed on create: refuse.
		if fi, lerr := os.Lstat(head); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return "", fmt.Errorf("%s is a dangling symlink", head)
		}
		tail = filepath.Join(filepath.Base(head), tail)
		head = filepath.Dir(head)
	}
	return "", fmt.Errorf("%s: too many path elements", p)
}
