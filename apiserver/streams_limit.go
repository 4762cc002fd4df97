package apiserver

import (
	"fmt"
	"sync"
)

// Stream bounds by default: streams hold a goroutine pair, two WebSockets
// and a connection to a node agent each for as long as they last.
const (
	DefaultMaxStreams        = 512
	DefaultMaxStreamsPerUser = 64
)

// streamLimiter counts the open streams, in total and per user.
type streamLimiter struct {
	mu                sync.Mutex
	total             int
	perUser           map[string]int
	maxTotal, maxUser int
	noun              string // what is counted: streams, watches
}

func newStreamLimiter(maxTotal, maxUser int) *streamLimiter {
	return &streamLimiter{perUser: map[string]int{}, maxTotal: maxTotal, maxUser: maxUser, noun: "streams"}
}

// acquire counts a new stream of user, or says which bound it is over.
// release uncounts it; calling it more than once is harmless.
func (l *streamLimiter) acquire(user string) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total >= l.maxTotal {
		return nil, fmt.Errorf("the server has %d %s open, its limit", l.total, l.noun)
	}
	if l.perUser[user] >= l.maxUser {
		return nil, fmt.Errorf("user %q has %d %s open, the limit per user", user, l.perUser[user], l.noun)
	}
	l.total++
	l.perUser[user]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.total--
			if l.perUser[user]--; l.perUser[user] <= 0 {
				delete(l.perUser, user)
			}
		})
	}, nil
}
