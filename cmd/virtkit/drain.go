package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/events"
	"github.com/virtkit/virtkit/store"
)

// drainReporter names `virtkit drain` in the events it records.
const drainReporter = "virtkit.io/drain"

// errDrainNeedsStore: the node verbs reach the control plane through its
// store only.
var errDrainNeedsStore = errors.New("needs the control plane's etcd (--store etcd://HOST:PORT); cordon, uncordon and drain through the API are not implemented")

func newNodeVerbCmds() []*cobra.Command {
	return []*cobra.Command{newDrainCmd(), newCordonCmd(true), newCordonCmd(false)}
}

// openNodeVerbStore opens the store of cordon, uncordon and drain.
func openNodeVerbStore(ctx context.Context, sf *storeFlags) (*openedStore, error) {
	if sf.isMemory() {
		return nil, fmt.Errorf("--store: %w", errDrainNeedsStore)
	}
	return sf.open(ctx, nil)
}

func newCordonCmd(cordon bool) *cobra.Command {
	var sf storeFlags
	use, short, verb := "cordon NODE", "Mark a node unschedulable", "cordoned"
	if !cordon {
		use, short, verb = "uncordon NODE", "Make a node schedulable again and end its drain", "uncordoned"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + `.

cordon sets spec.unschedulable on the Node: no new VMI or migration target is
placed there, and what runs there keeps running. uncordon clears it, removes
the drain taint (kubevirt.io/drain) and so withdraws the evacuation of the
node's VMIs, and clears refused evictions (EvictionRequested=False) on them.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openNodeVerbStore(cmd.Context(), &sf)
			if err != nil {
				return err
			}
			defer st.Close()
			if cordon {
				err = controller.Cordon(cmd.Context(), st, args[0])
			} else {
				err = controller.Uncordon(cmd.Context(), st, args[0])
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "node/%s %s\n", args[0], verb)
			return nil
		},
	}
	sf.register(cmd)
	return cmd
}

func newDrainCmd() *cobra.Command {
	var (
		sf       storeFlags
		timeout  time.Duration
		strategy string
	)
	cmd := &cobra.Command{
		Use:   "drain NODE --store etcd://HOST:PORT",
		Short: "Cordon a node and evict its VMIs by their eviction strategy",
		Long: `drain empties a node as kubectl drain empties a KubeVirt node: it cordons it
(spec.unschedulable), adds the drain taint kubevirt.io/drain:NoSchedule, and
evicts every VMI on it by its spec.evictionStrategy:

  LiveMigrate              the controller live-migrates the VMI to another node
  LiveMigrateIfPossible    the same when the VMI can live-migrate, else as None
  External                 the VMI is marked (status.evacuationNodeName) for an
                           external controller; drain waits for it to go
  None                     the VMI is shut down (deleted); a VM whose run
                           strategy restarts it starts a new one elsewhere

A VMI with LiveMigrate that cannot live-migrate blocks the drain: its eviction
is refused (condition EvictionRequested=False, reason EvictionBlocked, and a
FailedEviction event). drain prints each VMI's state as it changes and returns
once the node is empty, or fails after --timeout naming the VMIs left. The node
stays cordoned; uncordon ends the drain.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout < 0 {
				return fmt.Errorf("--timeout: %v is negative", timeout)
			}
			def := virtkit.EvictionStrategy(strategy)
			switch def {
			case "", virtkit.EvictionStrategyNone, virtkit.EvictionStrategyLiveMigrate,
				virtkit.EvictionStrategyLiveMigrateIfPossible, virtkit.EvictionStrategyExternal:
			default:
				return fmt.Errorf("--default-eviction-strategy: want None, LiveMigrate, LiveMigrateIfPossible or External, got %q", strategy)
			}
			ctx := cmd.Context()
			st, err := openNodeVerbStore(ctx, &sf)
			if err != nil {
				return err
			}
			defer st.Close()
			return runDrain(ctx, st, cmd.OutOrStdout(), args[0], timeout, def)
		},
	}
	sf.register(cmd)
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long, naming the VMIs left (0: wait until the node is empty)")
	cmd.Flags().StringVar(&strategy, "default-eviction-strategy", "",
		"eviction strategy of VMIs that name none (the cluster-wide evictionStrategy; default None)")
	return cmd
}

func runDrain(ctx context.Context, st store.Store, w io.Writer, node string, timeout time.Duration, def virtkit.EvictionStrategy) error {
	host, _ := os.Hostname()
	rec, err := events.NewRecorder(events.Options{Store: st, ReportingController: drainReporter, ReportingInstance: host})
	if err != nil {
		return err
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	cordoned := false
	last := map[string]controller.DrainState{}
	err = controller.Drain(ctx, st, node, controller.DrainOptions{
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
