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
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	quietLibraryLogs(os.Args[1:])
	if err := newRootCmd().ExecuteContext(ctx); err != nil {
		var ex exitError
		if asExit(err, &ex) {
			os.Exit(ex.code)
		}
		fmt.Fprintln(os.Stderr, "virtkit:", escLines(err.Error()))
		os.Exit(1)
	}
}

// quietLibraryLogs discards what the Kubernetes libraries log through
// klog (the API server a --store command serves in-process, etcd's client)
// unless the command is one of the long-running processes, whose operators
// read those lines. A one-shot command prints only its own output: the
// server's errors reach it as statuses. klog's logger is process-wide, so
// it is set here, before any goroutine starts.
func quietLibraryLogs(args []string) {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		if a == "controller" || a == "node" {
			return
		}
		break
	}
	klog.SetSlogLogger(slog.New(slog.DiscardHandler))
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
