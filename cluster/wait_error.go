package cluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// ErrWaitFailed is matched (errors.Is) by every [*WaitError]: a wait ended
// without its condition holding.
var ErrWaitFailed = errors.New("condition not reached")

// ErrFinalState is wrapped when the object reached a state it cannot leave
// and the condition does not hold in it (a migration that failed while the
// wait wanted it to succeed).
var ErrFinalState = errors.New("the object reached a final state in which the condition does not hold")

// WaitError says what a wait saw last before it gave up. errors.Is matches
// [ErrWaitFailed] and the cause: context.DeadlineExceeded or
// context.Canceled when the context ended, or [ErrFinalState].
type WaitError struct {
	// What was waited for: namespace/name, or "nodes ready".
	What string
	// Last describes the last state seen: phase, conditions and the like,
	// "not found" when the object never existed (or was deleted).
	Last string
	// Err is the cause.
	Err error
}

func (e *WaitError) Error() string {
	return fmt.Sprintf("waiting for %s: last seen %s: %v", e.What, e.Last, e.Err)
}

// Unwrap returns the cause.
func (e *WaitError) Unwrap() error { return e.Err }

// Is matches ErrWaitFailed.
func (e *WaitError) Is(target error) bool { return target == ErrWaitFailed }

// lastSeen records the last state a wait observed.
type lastSeen struct {
	key  store.Key
	desc string
}

func (l *lastSeen) observe(obj any, found bool) {
	if !found {
		l.desc = "not found"
		return
	}
	l.desc = describe(obj)
}

func (l *lastSeen) err(cause error) *WaitError {
	desc := l.desc
	if desc == "" {
		desc = "nothing"
	}
	return &WaitError{What: l.key.String(), Last: desc, Err: cause}
}

// WaitNodesReady waits until every node of the cluster has registered and
// reports Ready (what [Cluster.NodesReady] checks once). When ctx ends
// first the [*WaitError] names the nodes still missing or not ready.
func (c *Cluster) WaitNodesReady(ctx context.Context) error {
	want := make([]string, 0, len(c.nodes))
	for _, n := range c.nodes {
		want = append(want, n.Name)
	}
	last := "nothing"
	for {
		wctx, cancel := context.WithCancel(ctx)
		events, err := c.store.Watch(wctx, &virtkit.NodeList{}, store.WatchOptions{})
		if err != nil {
			cancel()
			return err
		}
		var nodes virtkit.NodeList
		if err := c.store.List(ctx, &nodes, store.ListOptions{}); err != nil {
			cancel()
			return err
		}
		state := map[string]*virtkit.Node{}
		for i := range nodes.Items {
			state[nodes.Items[i].Name] = &nodes.Items[i]
		}
		relist := false
		for !relist {
			var pending string
			pending, last = nodesPending(want, state)
			if pending == "" {
				cancel()
				return nil
			}
			select {
			case <-ctx.Done():
				cancel()
				return &WaitError{What: "nodes ready", Last: last, Err: ctx.Err()}
			case ev, ok := <-events:
				if !ok || ev.Type == store.Error {
					relist = true
					break
				}
				n, ok := ev.Object.(*virtkit.Node)
				if !ok {
					continue
				}
				if ev.Type == store.Deleted {
					delete(state, n.Name)
				} else {
					state[n.Name] = n
				}
			}
		}
		cancel()
	}
}

// nodesPending returns the first node not yet ready ("" when all are) and
// a description of every one that is not.
func nodesPending(want []string, state map[string]*virtkit.Node) (first, desc string) {
	var parts []string
	for _, name := range want {
		n, ok := state[name]
		switch {
		case !ok:
			parts = append(parts, name+" not registered")
		case !virtkit.IsConditionTrue(n.Status.Conditions, virtkit.NodeReady):
			parts = append(parts, name+" "+describe(n))
		default:
			continue
		}
		if first == "" {
			first = name
		}
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "", "all ready"
	}
	return first, strings.Join(parts, "; ")
}
