package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/events"
	"github.com/virtkit/virtkit/store"
)

// drainReporter names `virtkit drain` in the events it records.
const drainReporter = "virtkit.io/drain"

func newNodeVerbCmds() []*cobra.Command {
	return []*cobra.Command{newDrainCmd(), newCordonCmd(true), newCordonCmd(false)}
}

// nodeVerbFlags are how cordon, uncordon and drain reach the control
// plane: its API through a kubeconfig, or its etcd (--store wins).
type nodeVerbFlags struct {
	sf storeFlags
	kf kubeFlags
}

func (f *nodeVerbFlags) register(cmd *cobra.Command) {
	f.sf.register(cmd)
	f.kf.register(cmd)
}

// open returns the control plane's store and how to close it.
func (f *nodeVerbFlags) open(cmd *cobra.Command) (store.Store, func(), error) {
	if useAPI(cmd, &f.kf) {
		c, err := f.kf.connect(cmd)
		if err != nil {
			return nil, nil, err
		}
		s, err := newAPIStore(c)
		return s, func() {}, err
	}
	st, err := f.sf.openShared(cmd.Context(), nil)
	if err != nil {
		return nil, nil, err
	}
	return st, func() { _ = st.Close() }, nil
}

func newCordonCmd(cordon bool) *cobra.Command {
	var f nodeVerbFlags
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
			st, closeStore, err := f.open(cmd)
			if err != nil {
				return err
			}
			defer closeStore()
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
	f.register(cmd)
	return cmd
}

func newDrainCmd() *cobra.Command {
	var (
		f        nodeVerbFlags
		timeout  time.Duration
		strategy string
	)
	cmd := &cobra.Command{
		Use:   "drain NODE",
		Short: "Cordon a node and evict its VMIs by their eviction strategy",
		Long: `drain empties a node as kubectl drain empties a KubeVirt node: it cordons it
(spec.unschedulable), adds the drain taint kubevirt.io/drain:NoSchedule, and
evicts every VMI on it by its spec.evictionStrategy, or for a VMI that names
none the cluster-wide one (--default-eviction-strategy, else the KubeVirt
object's spec.configuration.evictionStrategy, which kubectl drain's evictions
through the API apply too, else None):

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
stays cordoned; uncordon ends the drain.

Like get and delete, drain, cordon and uncordon talk to the control plane's API
when a kubeconfig is given or found (--kubeconfig, $KUBECONFIG, ~/.kube/config),
and to its etcd with --store etcd://HOST:PORT, which wins.`,
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
			st, closeStore, err := f.open(cmd)
			if err != nil {
				return err
			}
			defer closeStore()
			return runDrain(cmd.Context(), st, cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], timeout, def)
		},
	}
	f.register(cmd)
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long, naming the VMIs left (0: wait until the node is empty)")
	cmd.Flags().StringVar(&strategy, "default-eviction-strategy", "",
		"eviction strategy of VMIs that name none (default: the KubeVirt object's evictionStrategy, else None)")
	return cmd
}

func runDrain(ctx context.Context, st store.Store, w, errw io.Writer, node string, timeout time.Duration, def virtkit.EvictionStrategy) error {
	host, _ := os.Hostname()
	rec, err := events.NewRecorder(events.Options{Store: st, ReportingController: drainReporter, ReportingInstance: host,
		// The recorder reports the events it could not write at debug level.
		Logger: slog.New(slog.NewTextHandler(errw, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		return err
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if def == "" {
		if def, err = cluster.ClusterEvictionStrategy(ctx, st); err != nil {
			return err
		}
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
