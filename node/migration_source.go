package node

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/internal/clockctx"
	"github.com/virtkit/virtkit/migration"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/tracing"
)

// failureReason is a cancel cause whose text becomes the migration's
// failureReason verbatim (KubeVirt's capitalised sentences).
type failureReason string

func (f failureReason) Error() string { return string(f) }

// errAbortRequested is the cancel cause of a migration whose abort was
// asked for (the VMIM was deleted, or the VMI).
var errAbortRequested error = failureReason(virtkit.MigrationReasonAborted)

// outgoing is one migration this agent runs as the source.
type outgoing struct {
	key    store.Key
	uid    types.UID
	vmiUID types.UID
	target string
	rec    *recordingMigrator
	cap    capCheck

	mu     sync.Mutex
	engine *migration.Engine

	cancel  context.CancelCauseFunc
	aborted atomic.Bool
	// announced: the completion extension's event was recorded.
	announced atomic.Bool
	done      chan struct{}
}

// vmiRef names the migrating VMI for events.
func (o *outgoing) vmiRef() *virtkit.VirtualMachineInstance {
	return &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: o.key.Namespace, Name: o.key.Name, UID: o.vmiUID}}
}

func (o *outgoing) getEngine() *migration.Engine {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.engine
}

// abort asks the engine to abort the job once; it reports whether this
// call was the first.
func (o *outgoing) abort() bool {
	if !o.aborted.CompareAndSwap(false, true) {
		return false
	}
	o.cancel(errAbortRequested)
	return true
}

// reconcileSource is the source agent's side: start the engine once the
// target is ready, pass abort requests on, and keep the ordinary reconcile
// away from a domain that is leaving (or has left) this host.
func (a *Agent) reconcileSource(ctx context.Context, vmi *virtkit.VirtualMachineInstance, domName string, info hypervisor.DomainInfo, exists bool) (reconcile.Result, bool, error) {
	key := store.Key{Namespace: vmi.Namespace, Name: vmi.Name}
	ms := vmi.Status.MigrationState
	o := a.migs.get(key)
	if o != nil {
		if ms != nil && (ms.MigrationUID != o.uid || ms.Failed) && o.abort() {
			// Ended by the controller, or superseded by a newer migration
			// of the VMI: nobody waits for this job any more.
			a.log.Info("aborting a migration that was ended elsewhere", "vmi", key.String(), "migration", o.uid)
		}
		if ms != nil && ms.MigrationUID == o.uid && (ms.AbortRequested || vmi.DeletionTimestamp != nil) && o.abort() {
			a.log.Info("aborting migration on request", "vmi", key.String())
			if err := a.updateMigrationState(ctx, key, o.uid, func(_ *virtkit.VirtualMachineInstance, ms *virtkit.VirtualMachineInstanceMigrationState) bool {
				if ms.AbortStatus != "" || ms.EndTimestamp != nil {
					return false
				}
				ms.AbortStatus = virtkit.MigrationAbortInProgress
				return true
			}); err != nil {
				return reconcile.Result{}, true, err
			}
		}
		if !exists || !info.State.IsActive() {
			// Leaving by migration: the engine reports the outcome.
			return reconcile.Result{RequeueAfter: 200 * time.Millisecond}, true, nil
		}
		return reconcile.Result{}, false, nil
	}
	if ms == nil || ms.Completed || ms.Failed {
		if ms != nil && ms.Failed && exists {
			return reconcile.Result{}, false, a.resumeAfterMigration(ctx, domName, info)
		}
		return reconcile.Result{}, false, nil
	}
	switch {
	case ms.EndTimestamp != nil:
		// Done here; the target takes the VMI over. Do not touch the
		// (shut off or undefined) domain meanwhile.
		return reconcile.Result{RequeueAfter: time.Second}, true, nil
	case ms.StartTimestamp != nil && guestLeft(info, exists):
		// Started by an earlier run of this agent (or one that could not
		// record the outcome), and the guest is no longer here: the job
		// completed, the target takes the VMI over.
		return reconcile.Result{RequeueAfter: time.Second}, true, a.endLeft(ctx, key, ms.MigrationUID)
	case ms.StartTimestamp != nil && exists && info.State == hypervisor.StatePaused && info.Reason == hypervisor.ReasonPostcopy:
		// Post-copy: the guest runs on the target already and the job
		// goes on without this agent; it leaves here or fails.
		return reconcile.Result{RequeueAfter: time.Second}, true, nil
	case ms.StartTimestamp != nil:
		// Started by an earlier run of this agent: nobody watches that job.
		err := a.endUnstarted(ctx, key, ms.MigrationUID, MigrationReasonAgentRestarted, "")
		return reconcile.Result{}, false, err
	case ms.AbortRequested || vmi.DeletionTimestamp != nil:
		err := a.endUnstarted(ctx, key, ms.MigrationUID, virtkit.MigrationReasonAborted, virtkit.MigrationAbortSucceeded)
		return reconcile.Result{}, false, err
	case ms.TargetNodeAddress == "" || !exists:
		return reconcile.Result{}, false, nil
	case info.State == hypervisor.StatePaused && info.Reason == hypervisor.ReasonUser:
		// KubeVirt migrates a paused guest paused (VIR_MIGRATE_PAUSED); the
		// hypervisor port has no such flag yet.
		err := a.endUnstarted(ctx, key, ms.MigrationUID, "migrating a paused VMI is not supported: "+hypervisor.ErrNotSupported.Error(), "")
		return reconcile.Result{}, false, err
	case info.State != hypervisor.StateRunning:
		return reconcile.Result{RequeueAfter: time.Second}, false, nil
	}
	if err := a.startOutgoing(ctx, vmi, domName, info); err != nil {
		a.log.Warn("migration could not start", "vmi", key.String(), "err", err)
		return reconcile.Result{}, false, a.endUnstarted(ctx, key, ms.MigrationUID, "start: "+maskHost(err.Error()), "")
	}
	return reconcile.Result{}, false, nil
}

// resumeAfterMigration resumes a source guest that a migration that did
// not move it left paused for its switchover (reason Migration): the job
// ended, so nothing else will. A guest paused by its user, or one that
// post-copy had already handed to the target, stays as it is.
func (a *Agent) resumeAfterMigration(ctx context.Context, domName string, info hypervisor.DomainInfo) error {
	if info.State != hypervisor.StatePaused || info.Reason != hypervisor.ReasonMigration {
		return nil
	}
	if err := a.opts.Hypervisor.Resume(ctx, domName); err != nil && !ignorable(err) {
		return err
	}
	a.log.Info("resumed the guest a failed migration left paused", "domain", domName)
	return nil
}

// guestLeft reports whether the source's domain shows that a migration
// moved the guest away: gone (the job undefined it), or shut off with
// reason Migrated.
func guestLeft(info hypervisor.DomainInfo, exists bool) bool {
	return !exists || info.State == hypervisor.StateShutoff && info.Reason == hypervisor.ReasonMigrated
}

// endLeft records the end of a migration whose job this agent no longer
// watches but whose guest left this host: endTimestamp without failed, so
// the target takes the VMI over (or the migration controller fails the
// migration when it does not).
func (a *Agent) endLeft(ctx context.Context, key store.Key, uid types.UID) error {
	now := a.now()
	return a.updateMigrationState(ctx, key, uid, func(_ *virtkit.VirtualMachineInstance, ms *virtkit.VirtualMachineInstanceMigrationState) bool {
		if ms.Completed || ms.Failed || ms.EndTimestamp != nil {
			return false
		}
		a.log.Info("migration ended while this agent did not watch it: the guest left", "vmi", key.String(), "migration", uid)
		ms.EndTimestamp = &now
		return true
	})
}

// endUnstarted fails a migration that is not (or no longer) running here.
func (a *Agent) endUnstarted(ctx context.Context, key store.Key, uid types.UID, reason string, abort virtkit.MigrationAbortStatus) error {
	now := a.now()
	a.log.Info("migration ended before it ran", "vmi", key.String(), "reason", reason)
	return a.updateMigrationState(ctx, key, uid, func(_ *virtkit.VirtualMachineInstance, ms *virtkit.VirtualMachineInstanceMigrationState) bool {
		// The decision was made on the VMI as the reconcile read it; an
		// engine that ended since then has written endTimestamp (before it
		// left the registry), and its outcome stands.
		if ms.Completed || ms.Failed || ms.EndTimestamp != nil {
			return false
		}
		ms.Failed, ms.Completed = true, true
		ms.FailureReason = reason
		if abort != "" {
			ms.AbortStatus = abort
		}
		if ms.StartTimestamp == nil {
			ms.StartTimestamp = &now
		}
		ms.EndTimestamp = &now
		return true
	})
}

// startOutgoing builds the engine's request from the resolved migration
// configuration and runs it in the background.
func (a *Agent) startOutgoing(ctx context.Context, vmi *virtkit.VirtualMachineInstance, domName string, info hypervisor.DomainInfo) error {
	ms := vmi.Status.MigrationState
	mig, ok := a.opts.Hypervisor.(hypervisor.Migrator)
	if !ok {
		return hypervisor.NotSupportedError("live migration", "the hypervisor does not implement hypervisor.Migrator")
	}
	cfg := ms.MigrationConfiguration
	if cfg == nil {
		cfg = virtkit.ClusterMigrationConfiguration(nil)
	}
	mem := info.MaxMemoryBytes
	if mem == 0 {
		mem = info.MemoryBytes
	}
	if n := a.opts.Migration.ParallelConnections; n < 0 {
		return fmt.Errorf("node option Migration.ParallelConnections: %d is negative", n)
	}
	params := hypervisor.MigrationParams{
		DestinationURI: ms.TargetNodeAddress,
		Persist:        true,
		UndefineSource: true,
		// KubeVirt encrypts the migration stream unless disableTLS.
		TLS: cfg.DisableTLS == nil || !*cfg.DisableTLS,
		// KubeVirt's override of the hypervisor's storage safety check
		// (libvirt refuses a writable disk on a filesystem it does not
		// know to be shared).
		Unsafe: cfg.UnsafeMigrationOverride != nil && *cfg.UnsafeMigrationOverride,
	}
	if n := a.opts.Migration.ParallelConnections; n > 1 {
		params.ParallelConnections = n
	}
	if bw := cfg.BandwidthPerMigration; bw != nil && bw.Sign() > 0 {
		params.Bandwidth = uint64(bw.Value())
	}
	target := &virtkit.Node{}
	if err := a.opts.Store.Get(ctx, store.Key{Name: ms.TargetNode}, target); err == nil {
		params.MigrateURI = target.Annotations[MigrationDataURIAnnotation]
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if f := a.opts.Migration.DestinationXML; f != nil {
		src, err := a.migrationSourceXML(ctx, domName)
		if err != nil {
			return fmt.Errorf("source domain XML: %w", err)
		}
		x, err := f(vmi, ms.TargetNode, src)
		if err != nil {
			return fmt.Errorf("destination XML: %w", err)
		}
		params.DestinationXML = x
	}
	var err error
	if params.DestinationXML, err = a.retargetNetworks(ctx, vmi, domName, params.DestinationXML); err != nil {
		return err
	}
	if params.DestinationXML, err = a.destinationOwner(ctx, domName, params.DestinationXML, ms.TargetNode); err != nil {
		return err
	}
	// A volume migration: the migrated volumes' disks are copied to their
	// destination claims.
	if params.DestinationXML, params.CopyDisks, err = a.migrateVolumes(ctx, vmi, domName, params.DestinationXML); err != nil {
		return fmt.Errorf("volume migration: %w", err)
	}
	req := migration.Request{
		Domain:            domName,
		Memory:            mem,
		Params:            params,
		AllowPostCopy:     cfg.AllowPostCopy != nil && *cfg.AllowPostCopy,
		AllowAutoConverge: cfg.AllowAutoConverge != nil && *cfg.AllowAutoConverge,
		// The completion timeout watchOutgoing applies, so the policy can
		// give up sooner when it predicts it cannot finish by then; the
		// operator's upper bound past it for a job the model says
		// converges (0 = the timeout is final).
		CompletionTimeout:    completionTimeout(cfg, mem),
		MaxCompletionTimeout: maxCompletionTimeout(cfg, mem),
		LinkBandwidth:        a.opts.Migration.LinkBandwidth,
	}
	if d := cfg.MaxDowntimeMs; d != nil && *d > 0 {
		req.MaxDowntime = time.Duration(*d) * time.Millisecond
		if req.MaxDowntime < migration.DefaultDowntimeLimit {
			req.DowntimeLimit = req.MaxDowntime
		}
	}
	eopts := a.opts.Migration.Engine
	eopts.Logger = a.log
	if eopts.TracerProvider == nil {
		eopts.TracerProvider = a.opts.TracerProvider
	}
	if eopts.Measurer == nil {
		eopts.Measurer, _ = a.opts.Hypervisor.(hypervisor.DirtyRateMeasurer)
	}
	if f := a.opts.Migration.Policy; f != nil {
		eopts.Policy = f(cfg)
	}
	rec := &recordingMigrator{inner: mig, now: a.opts.Clock.Now}
	engine, err := migration.NewEngine(rec.migrator(), req, eopts)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancelCause(a.migs.baseContext())
	key := store.Key{Namespace: vmi.Namespace, Name: vmi.Name}
	o := &outgoing{key: key, uid: ms.MigrationUID, vmiUID: vmi.UID, target: ms.TargetNode, rec: rec,
		engine: engine, cancel: cancel, done: make(chan struct{}),
		cap: capCheck{cap: params.Bandwidth, parallel: params.ParallelConnections}}
	if !a.migs.add(o) {
		cancel(nil)
		return nil // raced with another reconcile of the same VMI
	}
	now := a.now()
	if err := a.updateMigrationState(ctx, key, o.uid, func(_ *virtkit.VirtualMachineInstance, ms *virtkit.VirtualMachineInstanceMigrationState) bool {
		ms.StartTimestamp = &now
		ms.Mode = virtkit.MigrationPreCopy
		return true
	}); err != nil {
		a.migs.remove(o)
		cancel(nil)
		return err
	}
	a.log.Info("migration starting", "vmi", key.String(), "target", ms.TargetNode, "address", params.DestinationURI,
		"memory", mem, "bandwidth", params.Bandwidth)
	a.event(ctx, vmi, virtkit.EventTypeNormal, virtkit.EventReasonMigrating, "Migrate", "VirtualMachineInstance is migrating to node %s", ms.TargetNode)
	a.migs.wg.Add(1)
	go func() {
		defer a.migs.wg.Done()
		a.runOutgoing(tracing.TraceContext(runCtx, vmi, virtkit.MigrationTraceParentAnnotation), o, engine, cfg, mem)
	}()
	return nil
}

// runOutgoing runs the engine to the end, writing its progress (at most
// once per StatusInterval) and the outcome into status.migrationState.
func (a *Agent) runOutgoing(ctx context.Context, o *outgoing, engine *migration.Engine, cfg *virtkit.MigrationConfiguration, mem uint64) {
	defer close(o.done)
	defer a.Enqueue(o.key.Namespace, o.key.Name)
	defer func() { a.migs.finish(o, a.snapshotOf(o)) }()

	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		a.watchOutgoing(ctx, o, engine, cfg, mem, stopProgress)
	}()
	res, runErr := engine.Run(ctx)
	close(stopProgress)
	<-progressDone
	// Kept before the outcome is written, so whoever sees the outcome
	// finds the final snapshot (the deferred finish unregisters o later).
	a.migs.keepLast(o, a.snapshotOf(o))

	// The outcome must be written even when the agent is stopping.
	wctx, cancel := clockctx.WithTimeout(context.WithoutCancel(ctx), a.opts.Clock, 30*time.Second)
	defer cancel()
	cause := context.Cause(ctx)
	snap := engine.Snapshot()
	now := a.now()
	succeeded := res.Outcome == migration.OutcomeSucceeded
	if succeeded {
		a.releaseMigratedNetworks(wctx, o.key)
	}
	// An abort asked for before the job started (while the engine
	// measured the dirty rate, say) ends the run with the abort's cancel
	// cause and no job to abort: it succeeded all the same.
	aborted := !succeeded && o.aborted.Load() && (res.Aborted || errors.Is(cause, errAbortRequested))
	err := a.updateMigrationState(wctx, o.key, o.uid, func(_ *virtkit.VirtualMachineInstance, ms *virtkit.VirtualMachineInstanceMigrationState) bool {
		if ms.Completed || ms.Failed {
			return false
		}
		ms.Engine = a.engineStatus(snap, postCopyFaults(res.Mode == hypervisor.ModePostCopy, res.Job.Stats, o.rec))
		ms.EndTimestamp = &now
		if res.Mode == hypervisor.ModePostCopy {
			ms.Mode = virtkit.MigrationPostCopy
		}
		if succeeded {
			if o.aborted.Load() {
				ms.AbortStatus = virtkit.MigrationAbortFailed
			}
			return true
		}
		ms.Failed, ms.Completed = true, true
		if aborted {
			ms.AbortStatus = virtkit.MigrationAbortSucceeded
		}
		ms.FailureReason = failureText(aborted, cause, res, runErr)
		if o.aborted.Load() && !aborted {
			// Asked for, but the migration ended another way.
			ms.AbortStatus = virtkit.MigrationAbortFailed
		}
		return true
	})
	if err != nil {
		a.log.Error("could not record the migration outcome", "vmi", o.key.String(), "err", err)
	}
	// An extension decided after the last progress write.
	a.announceExtension(wctx, o, snap)
	if !succeeded {
		domName := DomainName(o.key.Namespace, o.key.Name)
		if info, exists, err := a.domainInfo(wctx, domName); err == nil && exists {
			if err := a.resumeAfterMigration(wctx, domName, info); err != nil {
				a.log.Error("could not resume the guest after the failed migration", "vmi", o.key.String(), "err", err)
			}
		}
		a.log.Warn("migration failed", "vmi", o.key.String(), "migration", o.uid, "reason", res.Reason, "cause", cause, "err", runErr)
		a.event(wctx, o.vmiRef(), virtkit.EventTypeWarning, virtkit.EventReasonMigrated, "Migrate",
			"VirtualMachineInstance migration uid %s failed: %s", o.uid, failureText(aborted, cause, res, runErr))
	}
	down, _ := res.Downtime.Get()
	logArgs := []any{"vmi", o.key.String(), "outcome", res.Outcome, "mode", res.Mode,
		"total", res.Total, "downtime", down, "reason", res.Reason}
	if n, ok := postCopyFaults(res.Mode == hypervisor.ModePostCopy, res.Job.Stats, o.rec).Get(); ok {
		logArgs = append(logArgs, "postCopyPageFaults", n)
	}
	a.log.Info("migration ended", logArgs...)
}

// failureText is what status.migrationState.failureReason and the
// failure's event say about a migration that did not succeed, read by the
// VMI's owner: the abort they asked for; the node's own reason (a timeout)
// or the migration policy's, with host paths and addresses masked; for a
// failure of the hypervisor, its TenantMessage or the text of an
// unsupported request, masked, else a sentence that sends the reader to
// the node's log, as the hypervisor's text can name the node's paths,
// sockets, users and addresses.
func failureText(aborted bool, cause error, res migration.Result, runErr error) string {
	switch {
	case aborted:
		return virtkit.MigrationReasonAborted
	case cause != nil && !errors.Is(cause, errAbortRequested) && !errors.Is(cause, context.Canceled):
		return maskHost(cause.Error())
	case res.Reason != "" && res.Rule != "":
		return maskHost(res.Reason)
	case res.Reason != "" || runErr != nil:
		return tenantMessage(runErr, "the hypervisor failed the migration (the node's log has the details)")
	}
	return "migration failed"
}

// watchOutgoing writes the engine's progress and applies KubeVirt's
// completion and progress timeouts of the configuration, which bound any
// policy's patience. The completion timeout is the engine's
// ([migration.Engine.CompletionDeadline]): the configuration's, extended
// up to virtkitMaxCompletionTimeoutPerGiB while the model says the job
// converges, which a Normal MigrationCompletionExtended event announces
// once.
func (a *Agent) watchOutgoing(ctx context.Context, o *outgoing, engine *migration.Engine, cfg *virtkit.MigrationConfiguration, mem uint64, stop <-chan struct{}) {
	interval := a.opts.Migration.StatusInterval
	t := a.opts.Clock.NewTicker(interval)
	defer t.Stop()
	progressTimeout := time.Duration(0)
	if p := cfg.ProgressTimeout; p != nil && *p > 0 {
		progressTimeout = time.Duration(*p) * time.Second
	}
	clk := a.opts.Clock
	began := clk.Now()
	lastProgress := began
	var lastRemaining uint64
	haveRemaining := false
	var written *virtkit.MigrationEngineStatus
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-t.C():
			// A tick can wait in the ticker's buffer while a progress
			// write is slow; once the engine has ended (stop), its
			// outcome is written instead, without a last progress write
			// first. (A select with both ready picks one at random.)
			if ended(ctx, stop) {
				return
			}
		}
		snap := engine.Snapshot()
		if avg, over := o.cap.exceeded(snap.DataSent, snap.Elapsed); over && snap.Phase != migration.PhasePostCopy {
			a.warnCapExceeded(ctx, o, avg)
		}
		if r, ok := snap.Remaining.Get(); ok {
			if !haveRemaining || r < lastRemaining {
				lastProgress = clk.Now()
			}
			lastRemaining, haveRemaining = r, true
		}
		a.announceExtension(ctx, o, snap)
		postCopy := snap.Phase == migration.PhasePostCopy
		switch acceptable := engine.CompletionDeadline(); {
		case postCopy:
		case acceptable > 0 && clk.Since(began) > acceptable:
			o.cancel(failureReason(fmt.Sprintf("Live migration is not completed after %d seconds and has been aborted", int(acceptable.Seconds()))))
		case progressTimeout > 0 && clk.Since(lastProgress) > progressTimeout:
			o.cancel(failureReason(fmt.Sprintf("Live migration is stuck for %d seconds and has been aborted", int(progressTimeout.Seconds()))))
		}
		status := a.engineStatus(snap, postCopyFaults(postCopy, hypervisor.JobStats{}, o.rec))
		if written != nil && reflect.DeepEqual(written, status) {
			continue
		}
		err := a.updateMigrationState(ctx, o.key, o.uid, func(_ *virtkit.VirtualMachineInstance, ms *virtkit.VirtualMachineInstanceMigrationState) bool {
			if ms.EndTimestamp != nil {
				return false
			}
			ms.Engine = status
			if postCopy {
				ms.Mode = virtkit.MigrationPostCopy
			}
			return true
		})
		if err != nil {
			a.log.Debug("could not record migration progress", "vmi", o.key.String(), "err", err)
			continue
		}
		written = status
	}
}

// ended reports whether stop is closed or ctx done.
func ended(ctx context.Context, stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// announceExtension records, once per migration, the Normal
// MigrationCompletionExtended event on o's VMI when the engine's decisions
// in snap include its CompletionExtended decision.
func (a *Agent) announceExtension(ctx context.Context, o *outgoing, snap migration.Snapshot) {
	if o.announced.Load() {
		return
	}
	for _, d := range snap.Decisions {
		if d.Action.Rule != migration.RuleCompletionExtended || !o.announced.CompareAndSwap(false, true) {
			continue
		}
		a.log.Info("migration runs past its completion timeout: it converges", "vmi", o.key.String(), "migration", o.uid, "reason", d.Action.Reason)
		a.event(ctx, o.vmiRef(), virtkit.EventTypeNormal, EventReasonMigrationCompletionExtended, "Migrate",
			"migration uid %s runs %s", o.uid, d.Action.Reason)
		return
	}
}

// engineStatus renders a snapshot for the VMI status, keeping the newest
// MaxDecisions decisions.
func (a *Agent) engineStatus(snap migration.Snapshot, faults hypervisor.Measured[uint64]) *virtkit.MigrationEngineStatus {
	s := snap.EngineStatus()
	if n, ok := faults.Get(); ok {
		v := int64(min(n, math.MaxInt64))
		s.PostCopyPageFaults = &v
	}
	if n := a.opts.Migration.MaxDecisions; len(s.Decisions) > n {
		s.Decisions = append([]virtkit.MigrationEngineDecision(nil), s.Decisions[len(s.Decisions)-n:]...)
	}
	for i := range s.Decisions {
		// Status times have second precision on the wire; keep what a
		// round trip keeps so comparisons stay stable.
		s.Decisions[i].Time = metav1.NewTime(s.Decisions[i].Time.UTC().Truncate(time.Second))
	}
	return s
}

// completionTimeout is KubeVirt's completion timeout of the configuration
// for mem bytes of guest memory (0 = none); KubeVirt counts the data in
// whole GB, rounded up.
func completionTimeout(cfg *virtkit.MigrationConfiguration, mem uint64) time.Duration {
	c := cfg.CompletionTimeoutPerGiB
	if c == nil || *c <= 0 {
		return 0
	}
	return time.Duration(float64(*c)*math.Ceil(float64(mem)/1e9)) * time.Second
}

// maxCompletionTimeout is the configuration's upper bound on the
// completion timeout for a migration the model says converges
// (virtkitMaxCompletionTimeoutPerGiB, counted as completionTimeout counts
// it); 0 = none, the completion timeout is final.
func maxCompletionTimeout(cfg *virtkit.MigrationConfiguration, mem uint64) time.Duration {
	c := cfg.VirtkitMaxCompletionTimeoutPerGiB
	if c == nil || *c <= 0 {
		return 0
	}
	return time.Duration(float64(*c)*math.Ceil(float64(mem)/1e9)) * time.Second
}

// migratableXMLer is a hypervisor that gives the domain XML as a migration
// sends it: libvirt's migratable XML keeps the CPU mode as defined
// (host-model) where the live XML has it expanded (custom), and libvirt 11
// refuses a destination XML whose CPU mode differs from the source's.
type migratableXMLer interface {
	MigratableXML(ctx context.Context, name string) (string, error)
}

// migrationSourceXML is the source domain's XML to derive a destination
// XML from: the migratable form where the hypervisor has one, else the
// live XML.
func (a *Agent) migrationSourceXML(ctx context.Context, domName string) (string, error) {
	if m, ok := a.opts.Hypervisor.(migratableXMLer); ok {
		return m.MigratableXML(ctx, domName)
	}
	return a.opts.Hypervisor.XML(ctx, domName)
}
