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
	ac    guestagent.AgentCommander
	opts  GuestAgentSourceOptions
	clock clock.WithTicker
	log   *slog.Logger
	wake  chan struct{}
	// started is closed once Start has run (see Prime).
	started   chan struct{}
	startOnce sync.Once
	jitter    func(g *pooledGuest, step int, d time.Duration) time.Duration

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
	// firstLeft counts the workers whose first poll has not finished;
	// firstDone is closed when it reaches zero (see Prime).
	firstLeft int
	firstDone chan struct{}
}

// pollTask is one worker of one guest, due at a time.
type pollTask struct {
	at    time.Time
	seq   uint64
	guest *pooledGuest
	step  int
	wait  time.Duration // the wait after this poll
	first bool          // the worker's first poll of this guest
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
	jitter := func(_ *pooledGuest, _ int, d time.Duration) time.Duration { return d }
	if opts.Float64 == nil {
		opts.Float64 = rand.Float64
	}
	if f, draw, keyed := opts.Jitter, opts.Float64, opts.KeyedFloat64; f > 0 {
		jitter = func(g *pooledGuest, step int, d time.Duration) time.Duration {
			u := drawUnit(keyed, draw, g.domain+"/"+g.steps[step].Name, clk.Now())
			return d + time.Duration(u*f*float64(d))
		}
	}
	return &guestAgentPool{ac: ac, opts: opts, clock: clk, log: opts.Logger, jitter: jitter,
		wake: make(chan struct{}, 1), started: make(chan struct{}), guests: map[string]*pooledGuest{}}
}

// Start runs the schedule and the workers until ctx ends.
func (s *guestAgentPool) Start(ctx context.Context, changed func(namespace, name string)) {
	s.mu.Lock()
	s.ctx, s.changed = ctx, changed
	pending := s.pending
	s.pending = nil
	s.mu.Unlock()
	s.startOnce.Do(func() { close(s.started) })
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
	if t.first {
		s.firstPolled(t.guest)
	}
	next := min(2*t.wait, t.guest.steps[t.step].Interval)
	s.push(t.guest, t.step, s.clock.Now().Add(s.jitter(t.guest, t.step, t.wait)), next, false)
}

// firstPolled notes that one worker of g has polled once.
func (s *guestAgentPool) firstPolled(g *pooledGuest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g.firstLeft > 0 {
		g.firstLeft--
		if g.firstLeft == 0 {
			close(g.firstDone)
		}
	}
}

func (s *guestAgentPool) push(g *pooledGuest, step int, at time.Time, wait time.Duration, first bool) {
	s.mu.Lock()
	if s.guests[g.domain] != g {
		s.mu.Unlock()
		return
	}
	s.seq++
	heap.Push(&s.due, pollTask{at: at, seq: s.seq, guest: g, step: step, wait: wait, first: first})
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
// them. Before Start it waits for Start (the node agent starts the pool
// and its reconcile workers together), and for a domain already followed
// it waits until every worker has polled it once (both bounded by ctx), so
// what the caller reads next does not depend on which of the agent's
// goroutines ran first.
func (s *guestAgentPool) Prime(ctx context.Context, domain string) {
	select {
	case <-s.started:
	case <-ctx.Done():
	}
	s.follow(ctx, domain, true)
}

func (s *guestAgentPool) follow(ctx context.Context, domain string, prime bool) {
	s.mu.Lock()
	if g, ok := s.guests[domain]; ok {
		done := g.firstDone
		s.mu.Unlock()
		if prime {
			select {
			case <-done:
			case <-g.ctx.Done():
			case <-ctx.Done():
			}
		}
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
	g := &pooledGuest{domain: domain, namespace: ns, name: name, quiet: prime, firstDone: make(chan struct{})}
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
	g.firstLeft = len(g.steps)
	switch {
	case prime:
		// Primed below; a Prime of the same guest meanwhile waits for
		// this one through firstDone.
		g.firstLeft = 0
	case g.firstLeft == 0:
		close(g.firstDone)
	}
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
		close(g.firstDone)
		s.mu.Unlock()
	}
	initial := g.poller.InitialInterval()
	for i, st := range g.steps {
		wait := min(initial, st.Interval)
		if !prime {
			s.push(g, i, first, wait, true)
			continue
		}
		s.push(g, i, first.Add(s.jitter(g, i, wait)), min(2*wait, st.Interval), false)
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
