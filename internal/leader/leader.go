package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/virtkit/virtkit"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"k8s.io/utils/clock"
)

// ErrLeadershipLost is returned by [Run] when the leader's session ended
// while it led; the work's context was cancelled first.
var ErrLeadershipLost = errors.New("leadership lost")

// errInvalidOptions wraps every configuration error of this package; it
// matches virtkit.ErrInvalidOptions.
var errInvalidOptions = virtkit.InvalidOptions("leader election")

// DefaultTTL is the session TTL when Options.TTL is zero: how long a dead
// leader's lease outlives it, so the worst-case failover time.
const DefaultTTL = 15 * time.Second

// resignTimeout bounds the resignation of a leader that stops cleanly.
const resignTimeout = 5 * time.Second

// Options configure [Run]. The zero value (with Client nil) is the
// always-leader mode of a single process.
type Options struct {
	// Client is the etcd connection; nil means there is nothing to compete
	// with and the caller always leads.
	Client *clientv3.Client
	// Key is the election prefix in etcd, e.g. "/virtkit/leader/controller".
	// Required with Client.
	Key string
	// Identity is what this replica proclaims (host name and pid); it is
	// logged by every replica when it leads. Required with Client.
	Identity string
	// TTL of the session lease, rounded up to whole seconds; 0 means
	// DefaultTTL.
	TTL time.Duration
	// OnLeader, if set, is called with the identity of every new leader
	// this replica observes (including itself).
	OnLeader func(identity string)
	// Logger receives election events; nil discards them.
	Logger *slog.Logger
}

// Run waits until this replica leads, then runs work with a context that is
// cancelled as soon as leadership is lost or ctx ends. It returns nil when
// ctx ended (after resigning, so a successor need not wait for the lease to
// expire), [ErrLeadershipLost] when the session ended while leading, or
// work's error if work returned on its own while ctx was live.
func Run(ctx context.Context, o Options, work func(ctx context.Context) error) error {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Client == nil {
		log.Info("no shared store: this process leads")
		if o.OnLeader != nil {
			o.OnLeader(o.Identity)
		}
		return work(ctx)
	}
	if o.Key == "" {
		return fmt.Errorf("%w: Key: required", errInvalidOptions)
	}
	if o.Identity == "" {
		return fmt.Errorf("%w: Identity: required", errInvalidOptions)
	}
	if o.TTL < 0 {
		return fmt.Errorf("%w: TTL: %v is negative", errInvalidOptions, o.TTL)
	}
	ttl := o.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	secs := int((ttl + time.Second - 1) / time.Second)

	sess, err := concurrency.NewSession(o.Client, concurrency.WithTTL(secs), concurrency.WithContext(ctx))
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("leader election session: %w", err)
	}
	defer sess.Close()
	elec := concurrency.NewElection(sess, o.Key)

	ren := newRenewals(time.Duration(secs)*time.Second, clock.RealClock{})
	renCtx, stopRenewals := context.WithCancel(ctx)
	renDone := make(chan struct{})
	go func() { defer close(renDone); ren.watch(renCtx, o.Client, sess.Lease(), log) }()
	defer func() { stopRenewals(); <-renDone }()

	obsCtx, stopObserve := context.WithCancel(ctx)
	observed := make(chan struct{})
	go func() { defer close(observed); observe(obsCtx, elec, log, o.OnLeader) }()
	defer func() { stopObserve(); <-observed }()

	log.Info("campaigning for leadership", "key", o.Key, "identity", o.Identity, "ttl", time.Duration(secs)*time.Second)
	campaignCtx, stopCampaign := context.WithCancel(ctx)
	go func() {
		// A session that ends while campaigning must end the campaign too.
		select {
		case <-sess.Done():
		case <-campaignCtx.Done():
		}
		stopCampaign()
	}()
	// etcd's Campaign, once its context ends, resigns with the client's own
	// context: while etcd is unreachable that blocks until the client is
	// closed. A replica asked to stop must not wait for it (it would hang
	// its process's shutdown): the caller closes the client after Run
	// returns, which ends the call, and the session's lease expires on its
	// own.
	campaigned := make(chan error, 1)
	go func() { campaigned <- elec.Campaign(campaignCtx, o.Identity) }()
	select {
	case err = <-campaigned:
	case <-ctx.Done():
		stopCampaign()
		return nil
	}
	stopCampaign()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		select {
		case <-sess.Done():
			return fmt.Errorf("%w: session ended while campaigning", ErrLeadershipLost)
		default:
		}
		return fmt.Errorf("leader election campaign: %w", err)
	}
	log.Info("leading", "identity", o.Identity, "key", elec.Key())

	workCtx, stopWork := context.WithCancel(ctx)
	defer stopWork()
	lost := make(chan struct{})
	go func() {
		select {
		case <-sess.Done():
			if ctx.Err() == nil {
				log.Error("leader session lost: stopping controllers", "identity", o.Identity,
					"sinceLastRenewal", ren.since().Round(time.Millisecond), "ttl", ren.ttl)
				close(lost)
			}
			stopWork()
		case <-workCtx.Done():
		}
	}()
	workErr := work(workCtx)
	stopWork()
	select {
	case <-lost:
		return fmt.Errorf("%w: %s: etcd session (lease) ended", ErrLeadershipLost, o.Identity)
	default:
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resignTimeout)
	defer cancel()
	if err := elec.Resign(rctx); err != nil {
		log.Warn("resigning leadership", "err", err)
	} else {
		log.Info("resigned leadership", "identity", o.Identity)
	}
	// The session's own Close cannot revoke the lease once ctx has ended.
	if _, err := o.Client.Revoke(rctx, sess.Lease()); err != nil {
		log.Debug("revoking election lease", "err", err)
	}
	if ctx.Err() != nil {
		return nil
	}
	return workErr
}

// observe logs every change of leader.
func observe(ctx context.Context, elec *concurrency.Election, log *slog.Logger, onLeader func(string)) {
	last := ""
	for resp := range elec.Observe(ctx) {
		if len(resp.Kvs) == 0 {
			continue
		}
		id := string(resp.Kvs[0].Value)
		if id == last {
			continue
		}
		last = id
		log.Info("leader elected", "leader", id)
		if onLeader != nil {
			onLeader(id)
		}
	}
}
