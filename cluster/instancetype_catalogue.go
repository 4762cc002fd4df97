package cluster

import (
	"context"
	"fmt"
	"time"

	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// installTimeout bounds installing the common catalogue in New, which
// takes no context.
const installTimeout = time.Minute

// installCommonInstancetypes applies KubeVirt's common instance types and
// preferences to st, as KubeVirt's operator deploys them.
func installCommonInstancetypes(st store.Store, defaults virtkit.DefaultOptions, clk clock.WithTicker) error {
	objs, err := virtkit.CommonInstancetypes()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	_, virtual := clk.(Stepper)
	if err := applyAll(ctx, st, defaults, virtual, objs...); err != nil {
		return fmt.Errorf("installing the common instancetypes: %w", err)
	}
	return nil
}
