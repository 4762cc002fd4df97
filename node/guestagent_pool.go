package node

import (
	"container/heap"
	"context"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit/guestagent"
)

// Defaults of [GuestAgentSourceOptions].
const (
	// DefaultGuestAgentWorkers is how many guest-agent calls one host runs
	// at once.
	DefaultGuestAgentWorkers = 4
	// DefaultGuestAgentJitter spreads each wait by up to 10 %.
	DefaultGuestAgentJitter = 0.1
)

// guestAgentPool polls the guest agents of all followed domains with a
// bounded set of workers fed by one schedule (a heap of due polls). Each
// guest keeps a guestagent.Poller for its snapshot and KubeVirt's per-worker
// intervals: every worker polls at once, then after the initial interval,
// doubling up to its own interval, as Poller.Start would, but without its
// goroutines and timers.
type guestAgentPool struct {
	ac     guestagent.AgentCommander
	opts   GuestAgentSourceOptions
	clock  clock.WithTicker
	log    *slog.Logger
	wake   chan struct{}
	jitter func(d time.Duration) time.Duration

	mu      sync.Mutex
	ctx     context.Context
	changed func(namespace, name string)
	guests  map[string]*pooledGuest
	pending []string // followed before Start
	due     pollHeap
	seq     uint64
}

type pooledGuest struct {
	domain          string
	namespace, name string
	poller          *guestagent.Poller
	steps           []guestagent.PollStep
	ctx             context.Context
	cancel          context.CancelFunc
	quiet           bool // no change notifications (while primed in a reconcile)
}

// pollTask is one worker of one guest, due at a time.
type pollTask struct {
	at    time.Time
	seq   uint64
	guest *pooledGuest
	step  int
	wait  time.Duration // the wait after this poll
}

func newGuestAgentPool(ac guestagent.AgentCommander, opts GuestAgentSourceOptions) *guestAgentPool {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultGuestAgentWorkers
	}
	if opts.Jitter == 0 {
		opts.Jitter = DefaultGuestAgentJitter
	}
	clk := opts.Poller.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	jitter := func(d time.Duration) time.Duration { return d }
	if opts.Float64 == nil {
		opts.Float64 = rand.Float64
	}
	if f, draw := opts.Jitter, opts.Float64; f > 0 {
		jitter = func(d time.Duration) time.Duration { return d + time.Duration(draw()*f*float64(d)) }
	}
	return &guestAgentPool{ac: ac, opts: opts, clock: clk, log: opts.Logger, jitter: jitter,
		wake: make(chan struct{}, 1), guests: map[string]*pooledGuest{}}
}

// Start runs the schedule and the workers until ctx ends.
func (s *guestAgentPool) Start(ctx context.Context, changed func(namespace, name string)) {
	s.mu.Lock()
	s.ctx, s.changed = ctx, changed
	pending := s.pending
	s.pending = nil
	s.mu.Unlock()
	for _, d := range pending {
		s.Follow(d)
	}
	work := make(chan pollTask)
	var wg sync.WaitGroup
	for range s.opts.Workers {
		wg.Go(func() {
			for t := range work {
				s.run(t)
			}
		})
	}
	s.schedule(ctx, work)
	close(work)
	wg.Wait()
	s.mu.Lock()
	for name, g := range s.guests {
		g.cancel()
		delete(s.guests, name)
	}
	s.due = nil
	s.mu.Unlock()
}

// schedule hands due polls to the workers, in order of their due time.
func (s *guestAgentPool) schedule(ctx context.Context, work chan<- pollTask) {
	for {
		s.mu.Lock()
		var next *pollTask
		var wait time.Duration
		if len(s.due) > 0 {
			next = &s.due[0]
			wait = next.at.Sub(s.clock.Now())
		}
		var t pollTask
		if next != nil && wait <= 0 {
			t = heap.Pop(&s.due).(pollTask)
		}
		s.mu.Unlock()

		if t.guest != nil {
			if s.current(t.guest) {
				select {
				case work <- t:
				case <-ctx.Done():
					return
				}
			}
			continue
		}
		var timerC <-chan time.Time
		var timer clock.Timer
		if next != nil {
			timer = s.clock.NewTimer(wait)
			timerC = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-s.wake:
		case <-timerC:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// current reports whether g is still followed (not forgotten or replaced).
func (s *guestAgentPool) current(g *pooledGuest) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.guests[g.domain] == g
}

// run polls one worker of one guest and schedules its next poll.
func (s *guestAgentPool) run(t pollTask) {
	if err := t.guest.poller.PollStep(t.guest.ctx, t.step); err != nil && t.guest.ctx.Err() == nil {
		s.log.Debug("guest agent poll failed", "domain", t.guest.domain, "worker", t.guest.steps[t.step].Name, "err", err)
	}
	next := min(2*t.wait, t.guest.steps[t.step].Interval)
	s.push(t.guest, t.step, s.clock.Now().Add(s.jitter(t.wait)), next)
}

func (s *guestAgentPool) push(g *pooledGuest, step int, at time.Time, wait time.Duration) {
	s.mu.Lock()
	if s.guests[g.domain] != g {
		s.mu.Unlock()
		return
	}
	s.seq++
	heap.Push(&s.due, pollTask{at: at, seq: s.seq, guest: g, step: step, wait: wait})
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Follow starts polling a running domain's agent: every worker at once.
func (s *guestAgentPool) Follow(domain string) {
	s.follow(context.Background(), domain, false)
}

// Prime follows domain and runs its first poll of every worker before it
// returns (bounded by ctx and the client's deadlines), so the status
// written right after a start already says whether the agent answers.
// Changes found by this poll are not notified: the caller is about to read
// them. It does nothing for a domain already followed.
func (s *guestAgentPool) Prime(ctx context.Context, domain string) {
	s.follow(ctx, domain, true)
}

func (s *guestAgentPool) follow(ctx context.Context, domain string, prime bool) {
	s.mu.Lock()
	if _, ok := s.guests[domain]; ok {
		s.mu.Unlock()
		return
	}
	if s.ctx == nil {
		if !slices.Contains(s.pending, domain) {
			s.pending = append(s.pending, domain)
		}
		s.mu.Unlock()
		return
	}
	ns, name, ok := SplitDomainName(domain)
	if !ok {
		s.mu.Unlock()
		return
	}
	g := &pooledGuest{domain: domain, namespace: ns, name: name, quiet: prime}
	g.ctx, g.cancel = context.WithCancel(s.ctx)
	po := s.opts.Poller
	changed := s.changed
	po.OnChange = func(guestagent.Snapshot) {
		s.mu.Lock()
		quiet := g.quiet
		s.mu.Unlock()
		if !quiet {
			changed(ns, name)
		}
	}
	if po.Logger == nil {
		po.Logger = s.log
	}
	client := guestagent.New(guestagent.NewPassthroughTransport(s.ac, domain, s.opts.Client), s.opts.Client)
	g.poller = guestagent.NewPoller(client, po)
	g.steps = g.poller.Steps()
	s.guests[domain] = g
	s.mu.Unlock()

	first := s.clock.Now()
	if prime {
		pctx, stop := context.WithCancel(ctx)
		unhook := context.AfterFunc(g.ctx, stop) // Forget cuts the prime short
		for i := range g.steps {
			if err := g.poller.PollStep(pctx, i); err != nil && pctx.Err() == nil {
				s.log.Debug("guest agent poll failed", "domain", domain, "worker", g.steps[i].Name, "err", err)
			}
		}
		unhook()
		stop()
		s.mu.Lock()
		g.quiet = false
		s.mu.Unlock()
	}
	initial := g.poller.InitialInterval()
	for i, st := range g.steps {
		wait := min(initial, st.Interval)
		if !prime {
			s.push(g, i, first, wait)
			continue
		}
		s.push(g, i, first.Add(s.jitter(wait)), min(2*wait, st.Interval))
	}
}

// maxPrime bounds the first poll Prime runs inside a reconcile.
const maxPrime = time.Second

// followGuest follows a domain's agent, priming it when the source can, so
// the status written now already carries the agent's first answers.
func followGuest(ctx context.Context, src GuestInfoSource, domain string) {
	if p, ok := src.(interface {
		Prime(ctx context.Context, domain string)
	}); ok {
		ctx, cancel := context.WithTimeout(ctx, maxPrime)
		defer cancel()
		p.Prime(ctx, domain)
		return
	}
	src.Follow(domain)
}

// Forget stops polling a domain's agent (and cuts its call in flight).
func (s *guestAgentPool) Forget(domain string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.guests[domain]; ok {
		g.cancel()
		delete(s.guests, domain)
	}
	s.pending = slices.DeleteFunc(s.pending, func(d string) bool { return d == domain })
}

// Info returns the latest information about a domain's guest.
func (s *guestAgentPool) Info(domain string) (GuestInfo, bool) {
	s.mu.Lock()
	g, ok := s.guests[domain]
	s.mu.Unlock()
	if !ok {
		return GuestInfo{}, false
	}
	return guestInfoFrom(g.poller.Snapshot()), true
}

// pollHeap orders polls by due time, then by the order they were queued.
type pollHeap []pollTask

func (h pollHeap) Len() int { return len(h) }
func (h pollHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h pollHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pollHeap) Push(x any)   { *h = append(*h, x.(pollTask)) }
func (h *pollHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}
