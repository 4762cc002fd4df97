package actions

import (
	"context"
	"errors"
	"runtime"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// getOptional reads obj; found=false (and no error) when it does not exist.
func getOptional(ctx context.Context, st store.Store, key store.Key, obj virtkit.Object) (found bool, err error) {
	err = st.Get(ctx, key, obj)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// retryOnConflict runs fn until it does not fail with store.ErrConflict,
// at most 10 times; fn must re-read what it writes. Between attempts it
// only yields to the writer that won (its re-read is the wait): a real
// timer here would hide a user action from a virtual-time cluster's Settle
// and let it land at a different virtual instant on every run.
func retryOnConflict(ctx context.Context, fn func() error) error {
	var err error
	for range 10 {
		if err = fn(); !errors.Is(err, store.ErrConflict) {
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		runtime.Gosched()
	}
	return err
}
