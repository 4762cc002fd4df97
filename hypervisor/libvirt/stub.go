//go:build !cgo || !(libvirt || libvirt_dlopen)

package libvirt

import (
	"context"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// Hypervisor is unavailable in this build: [New] always fails. The real
// adapter is built with cgo and the build tag libvirt (linking libvirt,
// Debian libvirt-dev) or libvirt_dlopen (loading libvirt.so.0 at run time,
// no headers needed). Without either, virtkit builds anywhere, and the
// simulated hypervisor is the default.
type Hypervisor struct{}

var (
	_ hypervisor.Hypervisor        = (*Hypervisor)(nil)
	_ hypervisor.DirtyRateMeasurer = (*Hypervisor)(nil)
	_ hypervisor.Migrator          = (*Hypervisor)(nil)
	_ hypervisor.AgentCommander    = (*Hypervisor)(nil)
	_ hypervisor.Throttler         = (*Hypervisor)(nil)
	_ hypervisor.ShutdownRequester = (*Hypervisor)(nil)
)

func errNoCgo(call string) error {
	return hypervisor.NotSupportedError("libvirt "+call, "this virtkit was built without the libvirt adapter; rebuild with cgo and -tags libvirt (needs Debian libvirt-dev) or -tags libvirt_dlopen")
}

// New returns an error matching [hypervisor.ErrNotSupported]: the libvirt
// bindings were not built in (see [Hypervisor]).
func New(ctx context.Context, opts Options) (*Hypervisor, error) {
	return nil, errNoCgo("New(" + opts.withDefaults().URI + ")")
}

// URI is empty: there is no connection.
func (h *Hypervisor) URI() string { return "" }

// Close does nothing.
func (h *Hypervisor) Close() error { return nil }

func (h *Hypervisor) Host(context.Context) (hypervisor.HostInfo, error) {
	return hypervisor.HostInfo{}, errNoCgo("Host")
}

// HostCPU fails: see [New].
func (h *Hypervisor) HostCPU(context.Context) (hypervisor.HostCPU, error) {
	return hypervisor.HostCPU{}, errNoCgo("HostCPU")
}

func (h *Hypervisor) Define(context.Context, string) (hypervisor.DomainID, error) {
	return hypervisor.DomainID{}, errNoCgo("Define")
}

func (h *Hypervisor) Undefine(context.Context, string) error { return errNoCgo("Undefine") }

func (h *Hypervisor) Start(context.Context, string, hypervisor.StartOptions) error {
	return errNoCgo("Start")
}

func (h *Hypervisor) Shutdown(context.Context, string) error { return errNoCgo("Shutdown") }

// RequestShutdown fails: see [New].
func (h *Hypervisor) RequestShutdown(context.Context, string) error {
	return errNoCgo("RequestShutdown")
}

func (h *Hypervisor) Reboot(context.Context, string) error  { return errNoCgo("Reboot") }
func (h *Hypervisor) Destroy(context.Context, string) error { return errNoCgo("Destroy") }
func (h *Hypervisor) Pause(context.Context, string) error   { return errNoCgo("Pause") }
func (h *Hypervisor) Resume(context.Context, string) error  { return errNoCgo("Resume") }

func (h *Hypervisor) List(context.Context) ([]hypervisor.DomainInfo, error) {
	return nil, errNoCgo("List")
}

func (h *Hypervisor) Info(context.Context, string) (hypervisor.DomainInfo, error) {
	return hypervisor.DomainInfo{}, errNoCgo("Info")
}

func (h *Hypervisor) XML(context.Context, string) (string, error) { return "", errNoCgo("XML") }

func (h *Hypervisor) MigratableXML(context.Context, string) (string, error) {
	return "", errNoCgo("MigratableXML")
}

func (h *Hypervisor) Stats(context.Context, string) (hypervisor.DomainStats, error) {
	return hypervisor.DomainStats{}, errNoCgo("Stats")
}

func (h *Hypervisor) Events(context.Context) (<-chan hypervisor.Event, error) {
	return nil, errNoCgo("Events")
}

func (h *Hypervisor) MeasureDirtyRate(context.Context, string, time.Duration) (hypervisor.DirtyRate, error) {
	return hypervisor.DirtyRate{}, errNoCgo("MeasureDirtyRate")
}

func (h *Hypervisor) StartMigration(context.Context, string, hypervisor.MigrationParams) (hypervisor.MigrationJob, error) {
	return nil, errNoCgo("StartMigration")
}

func (h *Hypervisor) AgentCommand(context.Context, string, string) (string, error) {
	return "", errNoCgo("AgentCommand")
}

func (h *Hypervisor) SetThrottle(context.Context, int) error { return errNoCgo("SetThrottle") }
