package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// stateFileVersion is written into every state file; a file of another
// version is refused rather than misread.
const stateFileVersion = 1

// maxStateFileBytes bounds what ReadState reads: a state file holds
// definitions of the guests of one host, well under this.
const maxStateFileBytes = 64 << 20

// ErrStateFile wraps problems with a persisted state file.
var ErrStateFile = errors.New("sim state file")

// PersistedDomain is one domain as a [Persistent] host records it.
type PersistedDomain struct {
	Name string `json:"name"`
	UUID string `json:"uuid"`
	// XML is the definition the domain was defined (or last redefined)
	// with.
	XML string `json:"xml"`
	// State is the domain state when the file was written; an active
	// state means the guest "kept running" while nobody watched.
	State      hypervisor.DomainState `json:"state"`
	Persistent bool                   `json:"persistent"`
}

type stateFile struct {
	Version int               `json:"version"`
	Host    string            `json:"host"`
	Domains []PersistedDomain `json:"domains"`
	// WatchdogDeadline is when the armed watchdog fires unless petted
	// (host clock); absent when it is not armed.
	WatchdogDeadline *time.Time `json:"watchdogDeadline,omitempty"`
}

// ReadState reads a state file written by a [Persistent] host. A missing
// file is an empty host. The file is checked, not trusted: at most 64 MiB,
// every domain named once, in a state libvirt has.
func ReadState(path string) ([]PersistedDomain, error) {
	f, err := readStateFile(path)
	return f.Domains, err
}

func readStateFile(path string) (stateFile, error) {
	file, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return stateFile{}, nil
	}
	if err != nil {
		return stateFile{}, fmt.Errorf("%w: %w", ErrStateFile, err)
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, maxStateFileBytes+1))
	if err != nil {
		return stateFile{}, fmt.Errorf("%w: %s: %w", ErrStateFile, path, err)
	}
	if len(data) > maxStateFileBytes {
		return stateFile{}, fmt.Errorf("%w: %s: larger than %d bytes", ErrStateFile, path, maxStateFileBytes)
	}
	var f stateFile
	if err := json.Unmarshal(data, &f); err != nil {
		return stateFile{}, fmt.Errorf("%w: %s: %w", ErrStateFile, path, err)
	}
	if f.Version != stateFileVersion {
		return stateFile{}, fmt.Errorf("%w: %s: version %d, want %d", ErrStateFile, path, f.Version, stateFileVersion)
	}
	seen := make(map[string]bool, len(f.Domains))
	for i, d := range f.Domains {
		switch {
		case d.Name == "":
			return stateFile{}, fmt.Errorf("%w: %s: domains[%d].name: required", ErrStateFile, path, i)
		case seen[d.Name]:
			return stateFile{}, fmt.Errorf("%w: %s: domains[%d].name: %q recorded twice", ErrStateFile, path, i, d.Name)
		case !knownState(d.State):
			return stateFile{}, fmt.Errorf("%w: %s: domains[%d].state: unknown state %q", ErrStateFile, path, i, d.State)
		}
		seen[d.Name] = true
	}
	return f, nil
}

// knownState reports whether a state file may record st.
func knownState(st hypervisor.DomainState) bool {
	switch st {
	case hypervisor.StateNoState, hypervisor.StateRunning, hypervisor.StateBlocked, hypervisor.StatePaused,
		hypervisor.StateShutdown, hypervisor.StateShutoff, hypervisor.StateCrashed, hypervisor.StatePMSuspended:
		return true
	}
	return false
}

// Persistent is a simulated host whose domains outlive its process: every
// change of a domain's definition or run state is written to a file
// (atomically: a temporary file renamed over it), and [OpenPersistent]
// recreates them in a fresh host, running guests running again, as if they
// had kept running while the process was away. Real QEMU guests survive a
// restart of the node agent; this lets tests restart a node agent process
// on the simulated hypervisor and see its stale guests.
//
// Only definitions and run states are kept: guest memory, CPU time and
// migrations in flight start over.
type Persistent struct {
	host *Host
	path string
	log  *slog.Logger

	mu   sync.Mutex // serialises saves and guards defs and the watchdog
	defs map[string]string
	err  error // the last save error, reported by Err
	// wdDeadline is the watchdog deadline last saved (zero: disarmed).
	wdDeadline time.Time
	// done is closed when the host's events are no longer followed.
	done chan struct{}
}

var (
	_ hypervisor.Hypervisor        = (*Persistent)(nil)
	_ hypervisor.DirtyRateMeasurer = (*Persistent)(nil)
	_ hypervisor.Migrator          = (*Persistent)(nil)
	_ hypervisor.AgentCommander    = (*Persistent)(nil)
	_ hypervisor.ShutdownRequester = (*Persistent)(nil)
)

// OpenPersistent restores the domains recorded in path (if it exists) into
// h, which should have none, and keeps path up to date from then on. It
// follows h's events until ctx ends, so state changes the guest makes on its
// own (power-off after an ACPI shutdown, crashes) are saved too.
func OpenPersistent(ctx context.Context, h *Host, path string) (*Persistent, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: path: required", ErrStateFile)
	}
	f, err := readStateFile(path)
	if err != nil {
		return nil, err
	}
	p := &Persistent{host: h, path: path, log: h.log, defs: map[string]string{}, done: make(chan struct{})}
	for _, d := range f.Domains {
		if err := p.restore(ctx, d); err != nil {
			return nil, fmt.Errorf("%w: %s: restore %s: %w", ErrStateFile, path, d.Name, err)
		}
	}
	if wd := f.WatchdogDeadline; wd != nil {
		if left := wd.Sub(h.clock.Now()); left > 0 {
			// Still armed: the deadline holds until the new agent
			// pets it, even if that agent dies before its first
			// heartbeat.
			if err := h.PetWatchdog(ctx, left); err != nil {
				return nil, err
			}
			p.wdDeadline = *wd
		} else if err := h.fireWatchdog(ctx); err != nil {
			// The watchdog fired while the process was away: the
			// guests were stopped then, not kept running.
			return nil, err
		}
	}
	events, err := h.Events(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.save(ctx); err != nil {
		return nil, err
	}
	go func() {
		defer close(p.done)
		for range events {
			// Events only say that something changed; record what is.
			_ = p.save(context.WithoutCancel(ctx))
		}
	}()
	return p, nil
}

func (p *Persistent) restore(ctx context.Context, d PersistedDomain) error {
	id, err := p.host.Define(ctx, d.XML)
	if err != nil {
		return err
	}
	if id.Name != d.Name {
		// Leave nothing behind that the file did not name.
		_ = p.host.Undefine(ctx, id.Name)
		return fmt.Errorf("xml: defines domain %q, the entry is %q", id.Name, d.Name)
	}
	p.defs[d.Name] = d.XML
	if d.State.IsActive() {
		paused := d.State == hypervisor.StatePaused
		if err := p.host.Start(ctx, d.Name, hypervisor.StartOptions{Paused: paused}); err != nil {
			return err
		}
	}
	if !d.Persistent {
		if err := p.host.Undefine(ctx, d.Name); err != nil {
			return err
		}
	}
	return nil
}

// Done is closed once ctx of [OpenPersistent] has ended and the last save
// it caused has been written: after it, the state file no longer changes.
func (p *Persistent) Done() <-chan struct{} { return p.done }

// Path is the state file.
func (p *Persistent) Path() string { return p.path }

// Err returns the error of the last failed save, nil if the last save
// succeeded.
func (p *Persistent) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// save writes the host's domains to the state file.
func (p *Persistent) save(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	infos, err := p.host.List(ctx)
	if err != nil {
		p.err = err
		return err
	}
	f := stateFile{Version: stateFileVersion, Host: p.host.Name(), Domains: make([]PersistedDomain, 0, len(infos))}
	if !p.wdDeadline.IsZero() {
		wd := p.wdDeadline
		f.WatchdogDeadline = &wd
	}
	live := make(map[string]bool, len(infos))
	for _, info := range infos {
		live[info.Name] = true
		xml, ok := p.defs[info.Name]
		if !ok {
			// Defined behind our back (an incoming migration): the live
			// XML is a valid definition too.
			if xml, err = p.host.XML(ctx, info.Name); err != nil {
				continue // gone meanwhile
			}
		}
		f.Domains = append(f.Domains, PersistedDomain{Name: info.Name, UUID: info.UUID, XML: xml,
			State: info.State, Persistent: info.Persistent})
	}
	for name := range p.defs {
		if !live[name] {
			delete(p.defs, name)
		}
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		p.err = err
		return err
	}
	if err := writeFileAtomic(p.path, data); err != nil {
		p.err = fmt.Errorf("%w: %w", ErrStateFile, err)
		p.log.Warn("saving sim state", "path", p.path, "err", err)
		return p.err
	}
	p.err = nil
	return nil
}

// saved runs a mutation and records the resulting state whether or not it
// failed (a failed call may still have changed something).
func (p *Persistent) saved(ctx context.Context, err error) error {
	if serr := p.save(context.WithoutCancel(ctx)); serr != nil && err == nil {
		return serr
	}
	return err
}

func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Define implements hypervisor.Hypervisor and records the definition.
func (p *Persistent) Define(ctx context.Context, domainXML string) (hypervisor.DomainID, error) {
	id, err := p.host.Define(ctx, domainXML)
	if err == nil {
		p.mu.Lock()
		p.defs[id.Name] = domainXML
		p.mu.Unlock()
	}
	return id, p.saved(ctx, err)
}

// Undefine implements hypervisor.Hypervisor.
func (p *Persistent) Undefine(ctx context.Context, name string) error {
	return p.saved(ctx, p.host.Undefine(ctx, name))
}

// Start implements hypervisor.Hypervisor.
func (p *Persistent) Start(ctx context.Context, name string, opts hypervisor.StartOptions) error {
	return p.saved(ctx, p.host.Start(ctx, name, opts))
}

// Shutdown implements hypervisor.Hypervisor.
func (p *Persistent) Shutdown(ctx context.Context, name string) error {
	return p.saved(ctx, p.host.Shutdown(ctx, name))
}

// RequestShutdown implements hypervisor.ShutdownRequester. The request
// changes nothing to save; the power-off that may follow is saved as the
// guest's own doing.
func (p *Persistent) RequestShutdown(ctx context.Context, name string) error {
	return p.host.RequestShutdown(ctx, name)
}

// Destroy implements hypervisor.Hypervisor.
func (p *Persistent) Destroy(ctx context.Context, name string) error {
	return p.saved(ctx, p.host.Destroy(ctx, name))
}

// Pause implements hypervisor.Hypervisor.
func (p *Persistent) Pause(ctx context.Context, name string) error {
	return p.saved(ctx, p.host.Pause(ctx, name))
}

// Resume implements hypervisor.Hypervisor.
func (p *Persistent) Resume(ctx context.Context, name string) error {
	return p.saved(ctx, p.host.Resume(ctx, name))
}

// PetWatchdog is [Host.PetWatchdog]; the deadline is also kept in the
// state file (saved again when it has moved by a quarter of timeout), so a
// host restored after the deadline comes back with its guests stopped, as
// if the watchdog had fired while the process was away.
func (p *Persistent) PetWatchdog(ctx context.Context, timeout time.Duration) error {
	if err := p.host.PetWatchdog(ctx, timeout); err != nil {
		return err
	}
	deadline := p.host.clock.Now().Add(timeout)
	p.mu.Lock()
	stale := p.wdDeadline.IsZero() || deadline.Sub(p.wdDeadline) >= timeout/4
	if stale {
		// An earlier deadline on file only fences sooner after a crash.
		p.wdDeadline = deadline
	}
	p.mu.Unlock()
	if !stale {
		return nil
	}
	return p.save(ctx)
}

// DisarmWatchdog is [Host.DisarmWatchdog], recorded in the state file.
func (p *Persistent) DisarmWatchdog(ctx context.Context) error {
	if err := p.host.DisarmWatchdog(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	p.wdDeadline = time.Time{}
	p.mu.Unlock()
	return p.save(ctx)
}

// WatchdogDeadline is [Host.WatchdogDeadline].
func (p *Persistent) WatchdogDeadline() (time.Time, bool) { return p.host.WatchdogDeadline() }

// WatchdogFired is [Host.WatchdogFired].
func (p *Persistent) WatchdogFired() uint64 { return p.host.WatchdogFired() }

// Unwrap returns the simulated host underneath.
func (p *Persistent) Unwrap() *Host { return p.host }

// Host implements hypervisor.Hypervisor.
func (p *Persistent) Host(ctx context.Context) (hypervisor.HostInfo, error) { return p.host.Host(ctx) }

// Reboot implements hypervisor.Hypervisor.
func (p *Persistent) Reboot(ctx context.Context, name string) error { return p.host.Reboot(ctx, name) }

// List implements hypervisor.Hypervisor.
func (p *Persistent) List(ctx context.Context) ([]hypervisor.DomainInfo, error) {
	return p.host.List(ctx)
}

// Info implements hypervisor.Hypervisor.
func (p *Persistent) Info(ctx context.Context, name string) (hypervisor.DomainInfo, error) {
	return p.host.Info(ctx, name)
}

// XML implements hypervisor.Hypervisor.
func (p *Persistent) XML(ctx context.Context, name string) (string, error) {
	return p.host.XML(ctx, name)
}

// Stats implements hypervisor.Hypervisor.
func (p *Persistent) Stats(ctx context.Context, name string) (hypervisor.DomainStats, error) {
	return p.host.Stats(ctx, name)
}

// Events implements hypervisor.Hypervisor.
func (p *Persistent) Events(ctx context.Context) (<-chan hypervisor.Event, error) {
	return p.host.Events(ctx)
}

// MeasureDirtyRate implements hypervisor.DirtyRateMeasurer.
func (p *Persistent) MeasureDirtyRate(ctx context.Context, name string, period time.Duration) (hypervisor.DirtyRate, error) {
	return p.host.MeasureDirtyRate(ctx, name, period)
}

// StartMigration implements hypervisor.Migrator. The source domain's end
// is saved when its event arrives.
func (p *Persistent) StartMigration(ctx context.Context, name string, params hypervisor.MigrationParams) (hypervisor.MigrationJob, error) {
	return p.host.StartMigration(ctx, name, params)
}

// AgentCommand implements hypervisor.AgentCommander.
func (p *Persistent) AgentCommand(ctx context.Context, name, command string) (string, error) {
	return p.host.AgentCommand(ctx, name, command)
}
