//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	lv "libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/hypervisor"
)

func TestTranslate(t *testing.T) {
	for _, tc := range []struct {
		name string
		code lv.ErrorNumber
		msg  string
		want error // nil: no sentinel
	}{
		{"NoDomain", lv.ERR_NO_DOMAIN, "Domain not found: no domain with matching name 'x'", hypervisor.ErrNotFound},
		{"NotRunning", lv.ERR_OPERATION_INVALID, "Requested operation is not valid: domain is not running", hypervisor.ErrInvalidState},
		{"AbortNoJob", lv.ERR_OPERATION_INVALID, "Requested operation is not valid: no job is active on the domain", hypervisor.ErrNoJob},
		{"PostCopyNoJob", lv.ERR_OPERATION_INVALID, "Requested operation is not valid: post-copy can only be started while outgoing migration is in progress", hypervisor.ErrNoJob},
		{"NoSupport", lv.ERR_NO_SUPPORT, "this function is not supported by the connection driver: virDomainQemuAgentCommand", hypervisor.ErrNotSupported},
		{"ArgumentUnsupported", lv.ERR_ARGUMENT_UNSUPPORTED, "unsupported configuration: dirty-ring", hypervisor.ErrNotSupported},
		{"AgentNotConfigured", lv.ERR_ARGUMENT_UNSUPPORTED, "argument unsupported: QEMU guest agent is not configured", hypervisor.ErrAgentUnavailable},
		{"AgentNotConnected", lv.ERR_AGENT_UNRESPONSIVE, "Guest agent is not responding: QEMU guest agent is not connected", hypervisor.ErrAgentUnavailable},
		{"AgentTimeout", lv.ERR_AGENT_COMMAND_TIMEOUT, "Guest agent command timed out", hypervisor.ErrAgentUnavailable},
		{"Aborted", lv.ERR_OPERATION_ABORTED, "operation aborted: migration out job: canceled by client", hypervisor.ErrMigrationAborted},
		{"XML", lv.ERR_XML_ERROR, "XML error: missing domain name", hypervisor.ErrInvalidArgument},
		{"UnsupportedFlags", lv.ERR_INVALID_ARG, "unsupported flags (0x1) in function testDomainCreateWithFlags", hypervisor.ErrNotSupported},
		{"InvalidArg", lv.ERR_INVALID_ARG, "invalid argument: bandwidth must be less than 8796093022207", hypervisor.ErrInvalidArgument},
		{"Exists", lv.ERR_OPERATION_FAILED, "operation failed: domain 'x' already exists with uuid 6a1c2f9e", hypervisor.ErrExists},
		{"DomExist", lv.ERR_DOM_EXIST, "operation failed: domain 'x' already exists", hypervisor.ErrExists},
		{"TestDriverNotRunning", lv.ERR_INTERNAL_ERROR, "internal error: domain 'x' not running", hypervisor.ErrInvalidState},
		{"TestDriverAlreadyRunning", lv.ERR_INTERNAL_ERROR, "internal error: Domain 'x' is already running", hypervisor.ErrInvalidState},
		{"Closed", lv.ERR_INTERNAL_ERROR, "internal error: client socket is closed", hypervisor.ErrConnection},
		{"RPC", lv.ERR_RPC, "End of file while reading data", hypervisor.ErrConnection},
		{"OtherInternal", lv.ERR_INTERNAL_ERROR, "internal error: unable to execute QEMU agent command 'x'", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cause := lv.Error{Code: tc.code, Message: tc.msg}
			err := translate(fmt.Errorf("call: %w", cause))
			require.Error(t, err)
			assert.Equal(t, tc.msg, err.Error(), "libvirt's message is kept")
			assert.ErrorIs(t, err, tc.code, "the libvirt code still matches")
			var le lv.Error
			require.ErrorAs(t, err, &le)
			for _, s := range []error{hypervisor.ErrNotFound, hypervisor.ErrInvalidState, hypervisor.ErrNoJob,
				hypervisor.ErrNotSupported, hypervisor.ErrAgentUnavailable, hypervisor.ErrMigrationAborted,
				hypervisor.ErrInvalidArgument, hypervisor.ErrExists, hypervisor.ErrConnection} {
				assert.Equal(t, s == tc.want, errors.Is(err, s), "errors.Is(%v)", s)
			}
		})
	}
}

func TestWrapNamesDomain(t *testing.T) {
	err := wrap("start", "default_vm", lv.Error{Code: lv.ERR_NO_DOMAIN, Message: "Domain not found"})
	var de *hypervisor.DomainError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "start", de.Op)
	assert.Equal(t, "default_vm", de.Domain)
	assert.ErrorIs(t, err, hypervisor.ErrNotFound)
	assert.Equal(t, err, wrap("other", "x", err), "wrapping twice keeps the first identity")
	assert.NoError(t, wrap("start", "x", nil))
	plain := errors.New("not libvirt's")
	assert.Equal(t, plain, translate(plain))
}

func TestDomainStateMapping(t *testing.T) {
	for _, tc := range []struct {
		state  lv.DomainState
		reason int
		want   hypervisor.DomainState
		why    hypervisor.StateReason
	}{
		{lv.DOMAIN_RUNNING, int(lv.DOMAIN_RUNNING_BOOTED), hypervisor.StateRunning, hypervisor.ReasonBooted},
		{lv.DOMAIN_RUNNING, int(lv.DOMAIN_RUNNING_MIGRATED), hypervisor.StateRunning, hypervisor.ReasonMigrated},
		{lv.DOMAIN_RUNNING, int(lv.DOMAIN_RUNNING_UNPAUSED), hypervisor.StateRunning, hypervisor.ReasonUnpaused},
		{lv.DOMAIN_RUNNING, int(lv.DOMAIN_RUNNING_POSTCOPY), hypervisor.StateRunning, hypervisor.ReasonPostcopy},
		{lv.DOMAIN_RUNNING, int(lv.DOMAIN_RUNNING_MIGRATION_CANCELED), hypervisor.StateRunning, hypervisor.ReasonMigrationCancel},
		{lv.DOMAIN_PAUSED, int(lv.DOMAIN_PAUSED_USER), hypervisor.StatePaused, hypervisor.ReasonUser},
		{lv.DOMAIN_PAUSED, int(lv.DOMAIN_PAUSED_MIGRATION), hypervisor.StatePaused, hypervisor.ReasonMigration},
		{lv.DOMAIN_PAUSED, int(lv.DOMAIN_PAUSED_POSTCOPY_FAILED), hypervisor.StatePaused, hypervisor.ReasonPostcopyFailed},
		{lv.DOMAIN_SHUTOFF, int(lv.DOMAIN_SHUTOFF_UNKNOWN), hypervisor.StateShutoff, hypervisor.ReasonUnknown},
		{lv.DOMAIN_SHUTOFF, int(lv.DOMAIN_SHUTOFF_SHUTDOWN), hypervisor.StateShutoff, hypervisor.ReasonShutdown},
		{lv.DOMAIN_SHUTOFF, int(lv.DOMAIN_SHUTOFF_DESTROYED), hypervisor.StateShutoff, hypervisor.ReasonDestroyed},
		{lv.DOMAIN_SHUTOFF, int(lv.DOMAIN_SHUTOFF_MIGRATED), hypervisor.StateShutoff, hypervisor.ReasonMigrated},
		{lv.DOMAIN_SHUTOFF, int(lv.DOMAIN_SHUTOFF_CRASHED), hypervisor.StateShutoff, hypervisor.ReasonCrashed},
		{lv.DOMAIN_SHUTDOWN, int(lv.DOMAIN_SHUTDOWN_USER), hypervisor.StateShutdown, hypervisor.ReasonUser},
		{lv.DOMAIN_CRASHED, int(lv.DOMAIN_CRASHED_PANICKED), hypervisor.StateCrashed, hypervisor.ReasonPanicked},
		{lv.DOMAIN_PMSUSPENDED, 0, hypervisor.StatePMSuspended, hypervisor.ReasonUnknown},
		{lv.DOMAIN_NOSTATE, 0, hypervisor.StateNoState, hypervisor.ReasonUnknown},
	} {
		s, r := domainState(tc.state, tc.reason)
		assert.Equal(t, tc.want, s, "state %d/%d", tc.state, tc.reason)
		assert.Equal(t, tc.why, r, "reason %d/%d", tc.state, tc.reason)
	}
}

func TestLifecycleEventMapping(t *testing.T) {
	for _, tc := range []struct {
		event  lv.DomainEventType
		detail int
		want   hypervisor.DomainState
		why    hypervisor.StateReason
	}{
		{lv.DOMAIN_EVENT_STARTED, int(lv.DOMAIN_EVENT_STARTED_BOOTED), hypervisor.StateRunning, hypervisor.ReasonBooted},
		{lv.DOMAIN_EVENT_STARTED, int(lv.DOMAIN_EVENT_STARTED_MIGRATED), hypervisor.StateRunning, hypervisor.ReasonMigrated},
		{lv.DOMAIN_EVENT_SUSPENDED, int(lv.DOMAIN_EVENT_SUSPENDED_PAUSED), hypervisor.StatePaused, hypervisor.ReasonUser},
		{lv.DOMAIN_EVENT_SUSPENDED, int(lv.DOMAIN_EVENT_SUSPENDED_MIGRATED), hypervisor.StatePaused, hypervisor.ReasonMigration},
		{lv.DOMAIN_EVENT_SUSPENDED, int(lv.DOMAIN_EVENT_SUSPENDED_POSTCOPY), hypervisor.StatePaused, hypervisor.ReasonPostcopy},
		{lv.DOMAIN_EVENT_RESUMED, int(lv.DOMAIN_EVENT_RESUMED_UNPAUSED), hypervisor.StateRunning, hypervisor.ReasonUnpaused},
		{lv.DOMAIN_EVENT_RESUMED, int(lv.DOMAIN_EVENT_RESUMED_POSTCOPY), hypervisor.StateRunning, hypervisor.ReasonPostcopy},
		{lv.DOMAIN_EVENT_STOPPED, int(lv.DOMAIN_EVENT_STOPPED_DESTROYED), hypervisor.StateShutoff, hypervisor.ReasonDestroyed},
		{lv.DOMAIN_EVENT_STOPPED, int(lv.DOMAIN_EVENT_STOPPED_SHUTDOWN), hypervisor.StateShutoff, hypervisor.ReasonShutdown},
		{lv.DOMAIN_EVENT_STOPPED, int(lv.DOMAIN_EVENT_STOPPED_MIGRATED), hypervisor.StateShutoff, hypervisor.ReasonMigrated},
		{lv.DOMAIN_EVENT_SHUTDOWN, int(lv.DOMAIN_EVENT_SHUTDOWN_GUEST), hypervisor.StateShutdown, hypervisor.ReasonUser},
		{lv.DOMAIN_EVENT_CRASHED, int(lv.DOMAIN_EVENT_CRASHED_PANICKED), hypervisor.StateCrashed, hypervisor.ReasonPanicked},
		{lv.DOMAIN_EVENT_DEFINED, 0, hypervisor.StateNoState, hypervisor.ReasonUnknown},
		{lv.DOMAIN_EVENT_UNDEFINED, 0, hypervisor.StateNoState, hypervisor.ReasonUnknown},
	} {
		s, r := lifecycleState(tc.event, tc.detail)
		assert.Equal(t, tc.want, s, "event %d/%d", tc.event, tc.detail)
		assert.Equal(t, tc.why, r, "event %d/%d", tc.event, tc.detail)
	}
}

func TestConvertStatsKeepsUnreported(t *testing.T) {
	rec := &lv.DomainStats{
		State:   &lv.DomainStatsState{StateSet: true, State: lv.DOMAIN_RUNNING, ReasonSet: true, Reason: int(lv.DOMAIN_RUNNING_BOOTED)},
		Cpu:     &lv.DomainStatsCPU{TimeSet: true, Time: 1500},
		Balloon: &lv.DomainStatsBalloon{CurrentSet: true, Current: 131072, MaximumSet: true, Maximum: 131072, RssSet: true, Rss: 1024},
		Vcpu:    []lv.DomainStatsVcpu{{StateSet: true, State: lv.VCPU_RUNNING, TimeSet: true, Time: 7}},
		DirtyRate: &lv.DomainStatsDirtyRate{CalcStatusSet: true, CalcStatus: int(lv.DOMAIN_DIRTYRATE_UNSTARTED),
			MegabytesPerSecondSet: true, MegabytesPerSecond: 0},
	}
	st := convertStats("vm", rec)
	assert.Equal(t, hypervisor.StateRunning, st.State)
	assert.Equal(t, hypervisor.ReasonBooted, st.Reason)
	assert.Equal(t, hypervisor.Some[time.Duration](1500), st.CPUTime)
	assert.False(t, st.CPUUser.Valid, "user time not reported")
	assert.Equal(t, hypervisor.Some[uint64](128<<20), st.Memory.BalloonCurrent, "KiB become bytes")
	assert.Equal(t, hypervisor.Some[uint64](1<<20), st.Memory.RSS)
	assert.False(t, st.Memory.Unused.Valid, "unused not reported")
	assert.False(t, st.DirtyRate.Valid, "an unstarted calculation is not a measured 0")
	require.Len(t, st.VCPUs, 1)
	assert.Equal(t, "running", st.VCPUs[0].State)
	assert.False(t, st.VCPUs[0].Wait.Valid)

	rec.DirtyRate.CalcStatus = int(lv.DOMAIN_DIRTYRATE_MEASURED)
	rec.DirtyRate.MegabytesPerSecond = 16
	assert.Equal(t, hypervisor.Some[uint64](16<<20), convertStats("vm", rec).DirtyRate, "MiB/s become bytes/s")
}

func TestMigrationArgs(t *testing.T) {
	params, flags, err := migrationArgs(hypervisor.MigrationParams{
		DestinationURI: "qemu+tcp://127.0.0.1:16510/system", MigrateURI: "tcp://127.0.0.1:49152",
		Bandwidth: 1<<20 + 1, AutoConverge: true, AutoConvergeInitial: 30, AutoConvergeIncrement: 5,
		ParallelConnections: 4, Persist: true, UndefineSource: true, TLS: true, Unsafe: true,
	})
	require.NoError(t, err)
	assert.Equal(t, "tcp://127.0.0.1:49152", params.URI)
	assert.Equal(t, uint64(2), params.Bandwidth, "bytes/s rounded up to MiB/s")
	assert.Equal(t, 30, params.AutoConvergeInitial)
	assert.Equal(t, 5, params.AutoConvergeIncrement)
	assert.Equal(t, 4, params.ParallelConnections)
	for _, f := range []lv.DomainMigrateFlags{lv.MIGRATE_LIVE, lv.MIGRATE_PEER2PEER, lv.MIGRATE_AUTO_CONVERGE,
		lv.MIGRATE_PARALLEL, lv.MIGRATE_PERSIST_DEST, lv.MIGRATE_UNDEFINE_SOURCE, lv.MIGRATE_TLS, lv.MIGRATE_UNSAFE} {
		assert.NotZero(t, flags&f, "flag %#x", f)
	}

	// Multifd only without post-copy: QEMU 7.2 loses the guest when a
	// multifd job switches to post-copy.
	params, flags, err = migrationArgs(hypervisor.MigrationParams{
		DestinationURI: "qemu+tcp://h/system", ParallelConnections: 8, PostCopy: true})
	require.NoError(t, err)
	assert.False(t, params.ParallelConnectionsSet)
	assert.Zero(t, flags&lv.MIGRATE_PARALLEL)
	assert.NotZero(t, flags&lv.MIGRATE_POSTCOPY)

	params, flags, err = migrationArgs(hypervisor.MigrationParams{DestinationURI: "qemu+tcp://h/system"})
	require.NoError(t, err)
	assert.False(t, params.URISet || params.BandwidthSet || params.ParallelConnectionsSet || params.AutoConvergeInitialSet)
	assert.Equal(t, lv.MIGRATE_LIVE|lv.MIGRATE_PEER2PEER, flags, "no TLS and no unsafe unless asked: never by default in the adapter")
	assert.False(t, params.MigrateDisksSet, "no disk copied unless asked")
}

// A volume migration copies the listed disks, and only them, to the
// target: the non-shared-disk flag with migrate_disks.
func TestMigrationArgsCopyDisks(t *testing.T) {
	for _, tc := range []struct {
		name    string
		disks   []string
		wantErr string
	}{
		{name: "one disk", disks: []string{"vdb"}},
		{name: "two disks", disks: []string{"vda", "vdc"}},
		{name: "empty device", disks: []string{"vda", ""}, wantErr: "CopyDisks[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params, flags, err := migrationArgs(hypervisor.MigrationParams{DestinationURI: "qemu+tcp://h/system", CopyDisks: tc.disks})
			if tc.wantErr != "" {
				require.ErrorIs(t, err, hypervisor.ErrInvalidArgument)
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.NotZero(t, flags&lv.MIGRATE_NON_SHARED_DISK)
			assert.Zero(t, flags&lv.MIGRATE_NON_SHARED_INC, "the new storage holds no backing data: a full copy")
			assert.True(t, params.MigrateDisksSet)
			assert.Equal(t, tc.disks, params.MigrateDisks)
			assert.True(t, params.MigrateDisksDetectZeroesSet)
			assert.Equal(t, tc.disks, params.MigrateDisksDetectZeroesList)
		})
	}
}

// A TLS migration's failure gets the certificate advice only when TLS may
// be the cause: a migration libvirt refused before QEMU opened the stream
// says why itself.
func TestMayBeTLS(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"stream broke", lv.Error{Code: lv.ERR_OPERATION_FAILED, Message: "operation failed: job 'migration out' unexpectedly failed"}, true},
		{"QEMU gone", lv.Error{Code: lv.ERR_INTERNAL_ERROR, Message: "internal error: qemu unexpectedly closed the monitor"}, true},
		{"CPU mode refused by the destination", lv.Error{Code: lv.ERR_CONFIG_UNSUPPORTED, Message: "unsupported configuration: Target CPU mode custom does not match source host-model"}, false},
		{"bad argument", lv.Error{Code: lv.ERR_INVALID_ARG, Message: "invalid argument: bandwidth"}, false},
		{"not a libvirt error", errors.New("context deadline exceeded"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, mayBeTLS(fmt.Errorf("migrate: %w", tc.err)))
		})
	}
}
