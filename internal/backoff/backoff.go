package backoff

import "time"

// KubeVirt's crash-loop constants (virt-controller's VM controller).
const (
	// MaxStartFailureDelay caps [StartFailureDelay].
	MaxStartFailureDelay = 300 * time.Second
	// MinStartFailureInterval is the base interval multiplied by count².
	MinStartFailureInterval = 10 * time.Second
)

// IntN returns a uniform random integer in [0, n). math/rand/v2.IntN fits.
type IntN func(n int) int

// StartFailureDelay is how long a VM waits before starting again after
// count consecutive failed starts: 10 s × count², plus a random jitter of up
// to half of that (to spread many failing VMs apart), capped at 300 s.
// count < 1 is treated as 1. A nil intn adds no jitter.
func StartFailureDelay(count int, intn IntN) time.Duration {
	if count < 1 {
		count = 1
	}
	// Beyond this count the cap applies anyway; stop before overflowing.
	if count > 100 {
		return MaxStartFailureDelay
	}
	base := int(MinStartFailureInterval/time.Second) * count * count
	delay := base
	if intn != nil {
		delay += intn(base/2 + 1)
	}
	return min(time.Duration(delay)*time.Second, MaxStartFailureDelay)
}
