package importer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Sandbox says how qemu-img is confined. qemu-img reads a tenant's image,
// and a qcow2 header can name other files (a backing file, an external data
// file); the importer refuses such headers itself, and a confined qemu-img
// cannot open any host file even if that check were bypassed.
type Sandbox string

// Sandboxes.
const (
	// SandboxAuto (the zero value) confines qemu-img with bubblewrap
	// when bwrap is found, and otherwise runs it unconfined (the header
	// checks still apply); New logs which one is in use.
	SandboxAuto Sandbox = ""
	// SandboxBwrap confines qemu-img with bubblewrap and fails with
	// ErrNoSandbox when bwrap is missing.
	SandboxBwrap Sandbox = "bwrap"
	// SandboxNone runs qemu-img unconfined.
	SandboxNone Sandbox = "none"
)

// ErrNoSandbox: QemuImg.Sandbox asks for a confinement this node cannot
// provide.
var ErrNoSandbox = errors.New("qemu-img sandbox unavailable")

// Confinement reports how q runs qemu-img: SandboxBwrap or SandboxNone
// (SandboxAuto resolved), or ErrNoSandbox.
func (q QemuImg) Confinement() (Sandbox, error) {
	switch q.Sandbox {
	case SandboxNone:
		return SandboxNone, nil
	case SandboxAuto, SandboxBwrap:
		if _, err := exec.LookPath(q.bwrap()); err != nil {
			if q.Sandbox == SandboxAuto {
				return SandboxNone, nil
			}
			return "", fmt.Errorf("%w: QemuImg.Sandbox %q: %w (install bubblewrap)", ErrNoSandbox, q.Sandbox, err)
		}
		return SandboxBwrap, nil
	}
	return "", fmt.Errorf("%w: QemuImg.Sandbox %q is not one of %q, %q, %q", ErrNoSandbox, q.Sandbox, SandboxAuto, SandboxBwrap, SandboxNone)
}

func (q QemuImg) bwrap() string {
	if q.Bwrap == "" {
		return "bwrap"
	}
	return q.Bwrap
}

// mounts are the host files one qemu-img run may open: read-only inputs
// and read-write outputs. Inside the sandbox each appears at its host path
// (so the arguments need no rewriting) and nothing else of the host exists
// but qemu-img's binary and libraries.
type mounts struct {
	ro, rw []string
}

// command returns the command that runs qemu-img with args, confined to m
// when q says so.
func (q QemuImg) command(ctx context.Context, m mounts, args ...string) (*exec.Cmd, error) {
	mode, err := q.Confinement()
	if err != nil {
		return nil, err
	}
	if mode == SandboxNone {
		return exec.CommandContext(ctx, q.bin(), args...), nil
	}
	bin, err := exec.LookPath(q.bin())
	if err != nil {
		return nil, fmt.Errorf("qemu-img: %w", err)
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return nil, err
	}
	libs, err := sharedLibraries(ctx, bin)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoSandbox, err)
	}
	bw := []string{
		"--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv",
		"--dev", "/dev", "--ro-bind", bin, bin,
	}
	for _, l := range libs {
		bw = append(bw, "--ro-bind", l, l)
	}
	for _, group := range []struct {
		flag  string
		paths []string
	}{{"--ro-bind", m.ro}, {"--bind", m.rw}} {
		for _, p := range group.paths {
			abs, err := filepath.Abs(p)
			if err != nil {
				return nil, err
			}
			bw = append(bw, group.flag, abs, abs)
		}
	}
	bw = append(append(bw, "--", bin), args...)
	return exec.CommandContext(ctx, q.bwrap(), bw...), nil
}

// sharedLibraries lists the shared objects the binary at bin loads (the
// dynamic loader included), as ldd resolves them.
func sharedLibraries(ctx context.Context, bin string) ([]string, error) {
	out, err := exec.CommandContext(ctx, "ldd", bin).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && bytes.Contains(ee.Stderr, []byte("not a dynamic executable")) {
			return nil, nil
		}
		return nil, fmt.Errorf("ldd %s: %w", bin, err)
	}
	var libs []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			libs = append(libs, f[2])
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			libs = append(libs, f[0])
		case len(f) >= 3 && f[1] == "=>" && f[2] == "not":
			return nil, fmt.Errorf("ldd %s: %s not found", bin, f[0])
		}
	}
	return libs, nil
}

// createOutput makes sure the output file exists, so that it can be bound
// into the sandbox (qemu-img truncates it).
func createOutput(p string) error {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}
