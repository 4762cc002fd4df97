package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit/cmd/virtkit/internal/drain"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube"
	"github.com/virtkit/virtkit/store"
)

func newNodeVerbCmds() []*cobra.Command {
	return []*cobra.Command{newDrainCmd(), newCordonCmd(true), newCordonCmd(false)}
}

// nodeVerbFlags are how cordon, uncordon and drain reach the control
// plane's API (clientFlags): the library's node verbs run over it through
// kube.Store.
type nodeVerbFlags struct {
	cf clientFlags
}

func (f *nodeVerbFlags) register(cmd *cobra.Command) { f.cf.register(cmd) }

// open returns the control plane's objects through its API and how to
// release them.
func (f *nodeVerbFlags) open(cmd *cobra.Command) (store.Store, func(), error) {
	c, release, err := f.cf.connect(cmd)
	if err != nil {
		return nil, nil, err
	}
	s, err := kube.NewStore(c.kube())
	if err != nil {
		release()
		return nil, nil, err
	}
	return s, release, nil
}

// storeVerb is a node verb's options (package drain).
type storeVerb interface {
	Complete(args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// run completes and validates o, then opens the store, hands it to o with
// set and runs o.
func (f *nodeVerbFlags) run(cmd *cobra.Command, args []string, o storeVerb, set func(store.Store)) error {
	if err := o.Complete(args); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	st, closeStore, err := f.open(cmd)
	if err != nil {
		return err
	}
	defer closeStore()
	set(st)
	return o.Run(cmd.Context())
}

func newCordonCmd(cordon bool) *cobra.Command {
	var f nodeVerbFlags
	use, short := "cordon NODE", "Mark a node unschedulable"
	if !cordon {
		use, short = "uncordon NODE", "Make a node schedulable again and end its drain"
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
			o := &drain.CordonOptions{Out: cmd.OutOrStdout(), Uncordon: !cordon}
			return f.run(cmd, args, o, func(st store.Store) { o.Store = st })
		},
	}
	f.register(cmd)
	return cmd
}

func newDrainCmd() *cobra.Command {
	var (
		f nodeVerbFlags
		o drain.Options
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

Like get and delete, drain, cordon and uncordon talk to the control plane's API,
through a kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config) or, with
--store etcd://HOST:PORT, which wins, through the API served inside this process
over that store.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Out, o.ErrOut = cmd.OutOrStdout(), cmd.ErrOrStderr()
			return f.run(cmd, args, &o, func(st store.Store) { o.Store = st })
		},
	}
	f.register(cmd)
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 0, "give up after this long, naming the VMIs left (0: wait until the node is empty)")
	cmd.Flags().StringVar(&o.DefaultEvictionStrategy, "default-eviction-strategy", "",
		"eviction strategy of VMIs that name none (default: the KubeVirt object's evictionStrategy, else None)")
	return cmd
}
