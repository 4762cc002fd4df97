package events

import (
	"context"
	"fmt"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// A full series cache is cut to a low-water mark in one pass, so a busy
// recorder (a fleet's worth of objects, each with a few events, all within
// the window) scans its cache once per CacheSize/4 new series instead of on
// every one.
func TestRecorderEvictsToLowWaterMark(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r, err := NewRecorder(Options{Store: store.NewMemory(), CacheSize: 16, Clock: testingclock.NewFakeClock(now)})
	require.NoError(t, err)
	ctx := context.Background()
	var afterFull []int
	full := false
	for i := range 64 {
		vm := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("vm-%02d", i), UID: "u"}}
		r.Event(ctx, vm, virtkit.EventTypeNormal, "Created", "Create", "created")
		r.mu.Lock()
		n := len(r.series)
		r.mu.Unlock()
		require.LessOrEqual(t, n, 16, "the cache stays within CacheSize")
		if full {
			afterFull = append(afterFull, n)
		}
		full = full || n == 16
	}
	// Cut to 11 (below three quarters), plus the new series: 12, then it
	// grows to 16 again before the next cut.
	require.NotEmpty(t, afterFull)
	assert.Equal(t, 12, afterFull[0], "the first new series after the cache filled")
	assert.Equal(t, []int{12, 13, 14, 15, 16, 12}, afterFull[:6], "evicted in batches, not one series at a time")
	assert.Equal(t, 64, r.Stats().Created)
}
