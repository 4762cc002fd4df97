package store_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

func TestRetryOnConflict(t *testing.T) {
	conflict := fmt.Errorf("VirtualMachine default/vm: %w", store.ErrConflict)
	other := errors.New("disk full")
	fast := store.Backoff{Steps: 4, Duration: time.Millisecond, Jitter: -1}
	tests := []struct {
		name      string
		results   []error // what fn returns per attempt; the last repeats
		backoff   store.Backoff
		wantCalls int
		wantErr   error
	}{
		{"success at once", []error{nil}, fast, 1, nil},
		{"conflicts then success", []error{conflict, conflict, nil}, fast, 3, nil},
		{"conflicts until the attempts run out", []error{conflict}, fast, 4, store.ErrConflict},
		{"another error is returned at once", []error{conflict, other}, fast, 2, other},
		{"the zero backoff makes 5 attempts", []error{conflict}, store.Backoff{}, 5, store.ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := store.RetryOnConflict(context.Background(), tt.backoff, func(context.Context) error {
				r := tt.results[min(calls, len(tt.results)-1)]
				calls++
				return r
			})
			assert.Equal(t, tt.wantCalls, calls)
			if tt.wantErr == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tt.wantErr)
			}
		})
	}
}

func TestRetryOnConflictHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := store.RetryOnConflict(ctx, store.Backoff{Steps: 100, Duration: time.Hour}, func(context.Context) error {
		calls++
		cancel()
		return store.ErrConflict
	})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, store.ErrConflict, "the last conflict is kept")
	assert.Equal(t, 1, calls, "no attempt after the context ended")

	err = store.RetryOnConflict(ctx, store.Backoff{}, func(context.Context) error { calls++; return nil })
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, calls)
}

// Writers racing on one object through the memory store: every increment
// survives because each conflict re-reads and reapplies.
func TestRetryOnConflictConcurrentWriters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := store.NewMemory()
	vm := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm", Annotations: map[string]string{"count": "0"}}}
	require.NoError(t, s.Create(ctx, vm))
	const writers, each = 4, 10
	var wg sync.WaitGroup
	var mu sync.Mutex
	conflicts := 0
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				err := store.RetryOnConflict(ctx, store.Backoff{Steps: 1000, Duration: 100 * time.Microsecond}, func(ctx context.Context) error {
					var cur virtkit.VirtualMachine
					if err := s.Get(ctx, store.KeyOf(vm), &cur); err != nil {
						return err
					}
					n, _ := strconv.Atoi(cur.Annotations["count"])
					cur.Annotations["count"] = strconv.Itoa(n + 1)
					err := s.Update(ctx, &cur)
					if errors.Is(err, store.ErrConflict) {
						mu.Lock()
						conflicts++
						mu.Unlock()
					}
					return err
				})
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	var got virtkit.VirtualMachine
	require.NoError(t, s.Get(ctx, store.KeyOf(vm), &got))
	assert.Equal(t, strconv.Itoa(writers*each), got.Annotations["count"])
	t.Logf("%d conflicts retried", conflicts)
}
