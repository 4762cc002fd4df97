//go:build linux

package network

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// maxRecord bounds a state file read back from StateDir.
const maxRecord = 64 << 10

func (h *Host) masqueradeDir() string { return filepath.Join(h.opts.StateDir, "masquerade") }

// recordMasquerade keeps m in the state directory, so the next Host on
// that directory (a restarted node agent) finds the copy.
func (h *Host) recordMasquerade(m Masquerade) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(h.masqueradeDir(), 0o755); err != nil {
		return fmt.Errorf("%w: %w", ErrHost, err)
	}
	p := filepath.Join(h.masqueradeDir(), m.ID+".json")
	if err := os.WriteFile(p+".tmp", b, 0o644); err != nil {
		return fmt.Errorf("%w: %w", ErrHost, err)
	}
	return os.Rename(p+".tmp", p)
}

func (h *Host) forgetMasquerade(id string) {
	_ = os.Remove(filepath.Join(h.masqueradeDir(), id+".json"))
}

// Masquerades lists the masquerade copies recorded in the state directory
// (by this Host or an earlier one on the same directory), with their
// owners. Unreadable records are skipped.
func (h *Host) Masquerades() ([]Masquerade, error) {
	ents, err := os.ReadDir(h.masqueradeDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHost, err)
	}
	var out []Masquerade
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := readBounded(filepath.Join(h.masqueradeDir(), e.Name()))
		if err != nil {
			continue
		}
		var m Masquerade
		if json.Unmarshal(b, &m) != nil || m.ID+".json" != e.Name() || len(m.ID) > 10 {
			continue
		}
		out = append(out, m)
	}
	return out, nil
}

func readBounded(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, maxRecord+1)
	n, err := f.Read(b)
	if n > maxRecord {
		return nil, fmt.Errorf("%s: larger than %d bytes", p, maxRecord)
	}
	if n == 0 && err != nil {
		return nil, err
	}
	return b[:n], nil
}

// own records links as this Host's (removed on Close) even when an
// earlier Host on the same state directory created them.
func (h *Host) own(links ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range links {
		if !slices.Contains(h.links, l) {
			h.links = append(h.links, l)
		}
	}
}

// ReapStale stops the DHCP servers an earlier Host on the same state
// directory left running (an agent killed with SIGKILL whose dnsmasq
// outlived it): every dnsmasq whose pid file is in the state directory and
// whose command line names that directory, unless this Host started it.
// It returns how many it stopped.
func (h *Host) ReapStale(ctx context.Context) (int, error) {
	dirs, err := filepath.Glob(filepath.Join(h.opts.StateDir, "dhcp-*"))
	if err != nil {
		return 0, err
	}
	h.mu.Lock()
	mine := map[int]bool{}
	for _, s := range h.dhcp {
		if s.cmd != nil && s.cmd.Process != nil {
			mine[s.cmd.Process.Pid] = true
		}
	}
	h.mu.Unlock()
	n := 0
	for _, dir := range dirs {
		b, err := readBounded(filepath.Join(dir, "pid"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 1 || mine[pid] {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte("--dhcp-hostsfile="+filepath.Join(dir, "hosts"))) {
			continue // gone, or the pid was reused by something else
		}
		_ = syscall.Kill(pid, syscall.SIGTERM)
		for i := 0; i < 100 && processAlive(pid); i++ {
			select {
			case <-ctx.Done():
				return n, ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
		if processAlive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		h.log.Info("stopped a stale DHCP server", "pid", pid, "dir", dir)
		n++
	}
	return n, nil
}

// processAlive: the process exists and is not a zombie.
func processAlive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// pid (comm) STATE ...
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}
