package drain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/events"
	"github.com/virtkit/virtkit/store"
)

// Reporter names `virtkit drain` in the events it records.
const Reporter = "virtkit.io/drain"

// ErrNoStore: Run was called without a store.
var ErrNoStore = errors.New("drain: Options.Store is not set")

// Options are drain's: the node, how long to wait, the eviction strategy
// of VMIs that name none, and the store.
type Options struct {
	// Out receives the progress ("node/N cordoned", each VMI's state as it
	// changes, "node/N drained"); ErrOut the events that could not be
	// recorded.
	Out, ErrOut io.Writer
	// Node is the node to drain (Complete sets it from the arguments).
	Node string
	// Timeout gives up after this long, naming the VMIs left; 0 waits
	// until the node is empty.
	Timeout time.Duration
	// DefaultEvictionStrategy is for VMIs that name none; empty takes the
	// KubeVirt object's, else None.
	DefaultEvictionStrategy string
	// ReportingInstance names this process in the events (Complete sets
	// the host name when empty).
	ReportingInstance string
	// Store is the control plane's store (its etcd, or kube.Store).
	Store store.Store
}

// Complete takes NODE from args and the host name for the events.
func (o *Options) Complete(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("accepts 1 arg(s), received %d", len(args))
	}
	o.Node = args[0]
	if o.ReportingInstance == "" {
		o.ReportingInstance, _ = os.Hostname()
	}
	if o.ErrOut == nil {
		o.ErrOut = io.Discard
	}
	return nil
}

// Validate checks the timeout and the eviction strategy.
func (o *Options) Validate() error {
	if o.Timeout < 0 {
		return fmt.Errorf("--timeout: %v is negative", o.Timeout)
	}
	switch virtkit.EvictionStrategy(o.DefaultEvictionStrategy) {
	case "", virtkit.EvictionStrategyNone, virtkit.EvictionStrategyLiveMigrate,
		virtkit.EvictionStrategyLiveMigrateIfPossible, virtkit.EvictionStrategyExternal:
		return nil
	}
	return fmt.Errorf("--default-eviction-strategy: want None, LiveMigrate, LiveMigrateIfPossible or External, got %q", o.DefaultEvictionStrategy)
}

// Run drains the node, printing each VMI's state as it changes, and
// returns once the node is empty or fails after Timeout.
func (o *Options) Run(ctx context.Context) error {
	if o.Store == nil {
		return ErrNoStore
	}
	rec, err := events.NewRecorder(events.Options{Store: o.Store, ReportingController: Reporter, ReportingInstance: o.ReportingInstance,
		// The recorder reports the events it could not write at debug level.
		Logger: slog.New(slog.NewTextHandler(o.ErrOut, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		return err
	}
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	def := virtkit.EvictionStrategy(o.DefaultEvictionStrategy)
	if def == "" {
		if def, err = cluster.ClusterEvictionStrategy(ctx, o.Store); err != nil {
			return err
		}
	}
	w, node := o.Out, o.Node
	cordoned := false
	last := map[string]controller.DrainState{}
	err = controller.Drain(ctx, o.Store, node, controller.DrainOptions{
		DefaultEvictionStrategy: def,
		Events:                  rec,
		Progress: func(p controller.DrainProgress) {
			if !cordoned {
				fmt.Fprintf(w, "node/%s cordoned\n", node)
				cordoned = true
			}
			now := map[string]controller.DrainState{}
			for _, v := range p.VMIs {
				key := v.Namespace + "/" + v.Name
				now[key] = v.State
				if last[key] != v.State {
					fmt.Fprintf(w, "vmi/%s (evictionStrategy %s): %s: %s\n", key, v.Strategy, v.State, v.Message)
				}
			}
			last = now
		},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "node/%s drained\n", node)
	return nil
}

// CordonOptions are cordon's and uncordon's.
type CordonOptions struct {
	// Out receives "node/N cordoned" or "node/N uncordoned".
	Out io.Writer
	// Node is the node (Complete sets it from the arguments).
	Node string
	// Uncordon makes the node schedulable again and ends its drain.
	Uncordon bool
	// Store is the control plane's store (its etcd, or kube.Store).
	Store store.Store
}

// Complete takes NODE from args.
func (o *CordonOptions) Complete(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("accepts 1 arg(s), received %d", len(args))
	}
	o.Node = args[0]
	return nil
}

// Validate has nothing to check: any node name goes to the store.
func (o *CordonOptions) Validate() error { return nil }

// Run cordons or uncordons the node.
func (o *CordonOptions) Run(ctx context.Context) error {
	if o.Store == nil {
		return ErrNoStore
	}
	verb, do := "cordoned", controller.Cordon
	if o.Uncordon {
		verb, do = "uncordoned", controller.Uncordon
	}
	if err := do(ctx, o.Store, o.Node); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "node/%s %s\n", o.Node, verb)
	return nil
}
