package subresources

import (
	"fmt"
	"sync"
)

// Limiter counts long-running requests (streams, watches) open at once, in
// total and per user. The Handler bounds its streams with one; a server
// may bound its watches with another.
type Limiter struct {
	mu                sync.Mutex
	total             int
	perUser           map[string]int
	maxTotal, maxUser int
	noun              string // what is counted: streams, watches
}

// NewLimiter returns a Limiter of maxTotal requests at once and maxUser
// per user; noun names what it counts in its errors ("streams").
func NewLimiter(maxTotal, maxUser int, noun string) *Limiter {
	return &Limiter{perUser: map[string]int{}, maxTotal: maxTotal, maxUser: maxUser, noun: noun}
}

// Acquire counts a new request of user, or says which bound it is over.
// release uncounts it; calling it more than once is harmless.
func (l *Limiter) Acquire(user string) (release func(), err error) {
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
