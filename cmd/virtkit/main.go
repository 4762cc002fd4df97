// Command virtkit is virtkit's command-line tool: the demo, manifest
// validation and rendering, guest-agent calls, benchmarks and the
// multi-process control plane.
//
// Layout: the processes (`virtkit controller`, `virtkit node`) are
// assembled by package cluster (NewControlPlane, NewNodeProcess, New, and
// StartAPIServer for the API, its upload proxy and the local node
// endpoints); this package parses their flags into its options. Commands
// move into packages of their own under internal/, as kubectl keeps them:
// one package per verb with an Options type (Complete, Validate, Run), the
// cobra wiring here filling it from the flags and connecting the
// transport: internal/get, internal/delete, internal/apply,
// internal/describe, internal/virtctl (start, stop, restart, migrate,
// migrate-cancel, pause, unpause, soft-reboot and the guest-information
// calls), internal/drain (drain, cordon, uncordon, run by the library
// against a store.Store: etcd, or the API through kube.Store),
// internal/validate and internal/render. internal/term (escaping for the
// terminal), internal/kube (the API connection) and internal/manifest
// (reading -f's files, directories and stdin) are what such packages
// share. Tables come from package printers, the API server's printer
// columns.
//
// Still here: the processes' flags (controller, node), demo, agent, bench,
// the streams (console, vnc, ssh, port-forward), completion, and the two
// transports' connection (storeflag.go for --store, kubeclient.go for a
// kubeconfig, with kubectl-style error reporting).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCmd().ExecuteContext(ctx); err != nil {
		var ex exitError
		if asExit(err, &ex) {
			os.Exit(ex.code)
		}
		fmt.Fprintln(os.Stderr, "virtkit:", escLines(err.Error()))
		os.Exit(1)
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "virtkit",
		Short:         "KubeVirt's virtual-machine semantics without Kubernetes",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// One line per subcommand; each lives in its own file.
	root.AddCommand(newDemoCmd())
	root.AddCommand(newAgentCmd())
	root.AddCommand(newRenderCmd())
	root.AddCommand(newValidateCmd())
	root.AddCommand(newBenchCmd())
	root.AddCommand(newControllerCmd())
	root.AddCommand(newNodeCmd())
	root.AddCommand(newApplyCmd())
	root.AddCommand(newGetCmd())
	root.AddCommand(newDeleteCmd())
	root.AddCommand(newDescribeCmd())
	root.AddCommand(newVirtctlCmds()...)
	root.AddCommand(newStreamCmds()...)
	root.AddCommand(newNodeVerbCmds()...)
	return root
}
