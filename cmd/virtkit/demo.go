package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/manifest"
	"github.com/virtkit/virtkit/store"
)

//go:embed demo.yaml
var demoManifests []byte

type demoOptions struct {
	files       []string
	nodes       int
	hypervisor  string
	uri         string
	output      string
	timeout     time.Duration
	metricsAddr string
	hold        bool
	verbose     bool
}

func newDemoCmd() *cobra.Command {
	o := demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run an embedded control plane and walk a VM through its life",
		Long: `demo starts a whole virtkit control plane in this process (memory store,
the controllers, simulated hosts in real time), applies the bundled example
(or -f manifests) and walks a VirtualMachine through its life: created,
scheduled, running with guest information, paused and unpaused, stopped and
started, a ReplicaSet scaled, and live-migrated. It prints what a user would
watch and exits 0 only if every step reached its expected state.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringSliceVarP(&o.files, "filename", "f", nil, "manifests to apply instead of the bundled example (files, directories, - for stdin)")
	f.IntVar(&o.nodes, "nodes", 2, "number of hosts")
	f.StringVar(&o.hypervisor, "hypervisor", "sim", "hypervisor of every host: sim or libvirt")
	f.StringVar(&o.uri, "uri", "", "libvirt connection URI with --hypervisor libvirt (default qemu:///system)")
	f.StringVarP(&o.output, "output", "o", "text", "text, or json (the final objects with their status)")
	f.DurationVar(&o.timeout, "timeout", 3*time.Minute, "give up after this long")
	f.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address (e.g. 127.0.0.1:9090) while the demo runs")
	f.BoolVar(&o.hold, "hold", false, "with --metrics-addr: keep serving after the walk until interrupted")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "log what the controllers and node agents do (to stderr)")
	return cmd
}

func runDemo(ctx context.Context, stdout, stderr io.Writer, o demoOptions) error {
	if o.output != "text" && o.output != "json" {
		return fmt.Errorf("--output: want text or json, got %q", o.output)
	}
	if o.nodes < 1 {
		return fmt.Errorf("--nodes: want at least 1, got %d", o.nodes)
	}
	diskHost := ""
	if o.hypervisor == "libvirt" && len(o.files) == 0 {
		// The bundled example's VM imports a data disk through a
		// DataVolume from this loopback server.
		host, stop, err := serveDemoDisk(ctx)
		if err != nil {
			return err
		}
		defer stop()
		diskHost = host
	}
	objs, err := demoObjects(o.files, o.hypervisor, diskHost)
	if err != nil {
		return err
	}
	text := stdout
	if o.output == "json" {
		text = io.Discard
	}
	logger := slog.New(slog.DiscardHandler)
	if o.verbose {
		logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	copts, cleanup, err := demoClusterOptions(ctx, o, logger)
	if err != nil {
		return err
	}
	defer cleanup()
	if o.metricsAddr != "" {
		// Served metrics include the control plane's calls to its store
		// (KubeVirt's REST client families).
		if copts.Store, err = instrumentedStore(copts.Store); err != nil {
			return err
		}
	}
	c, err := cluster.New(copts)
	if err != nil {
		return err
	}

	interrupted := ctx // ends on an interrupt, not at --timeout
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	runCtx, stopCluster := context.WithCancel(context.WithoutCancel(ctx))
	clusterDone := make(chan error, 1)
	go func() { clusterDone <- c.Start(runCtx) }()
	defer func() {
		stopCluster()
		<-clusterDone
	}()

	var metricsDone func()
	if o.metricsAddr != "" {
		metricsDone, err = serveDemoMetrics(runCtx, o.metricsAddr, c, text)
		if err != nil {
			return err
		}
	}

	w := &walk{ctx: ctx, c: c, out: text, progress: stderr, start: time.Now(), hostKind: "simulated"}
	if o.hypervisor == "libvirt" {
		w.hostKind = "libvirt"
	}
	if o.output == "json" {
		w.progress = io.Discard
	}
	err = w.run(objs)
	if err == nil && o.hold && o.metricsAddr != "" {
		fmt.Fprintf(text, "\nholding: serving metrics on http://%s/metrics until interrupted\n", o.metricsAddr)
		// --timeout bounds the walk, not the hold: hold until interrupted.
		<-interrupted.Done()
	}
	if metricsDone != nil {
		metricsDone()
	}
	if o.output == "json" {
		if jerr := writeFinalObjects(context.WithoutCancel(ctx), stdout, c.Store()); jerr != nil && err == nil {
			err = jerr
		}
	}
	// Guests outlive their node agents by design (a restarted agent adopts
	// them), so the demo deletes what it created before it stops.
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	if cerr := w.cleanUp(cctx); cerr != nil && err == nil {
		err = cerr
	}
	ccancel()
	if err != nil {
		fmt.Fprintf(stderr, "demo failed: %v\n", err)
		return exitError{code: 1}
	}
	return nil
}

// demoObjects decodes the bundled example or the given files.
// diskHost replaces the libvirt example's disk server placeholder.
func demoObjects(files []string, hypervisorName, diskHost string) ([]virtkit.Object, error) {
	if len(files) == 0 {
		if hypervisorName == "libvirt" {
			return virtkit.Decode(bytes.NewReader(bytes.ReplaceAll(demoLibvirtManifests, []byte(demoDiskHost), []byte(diskHost))))
		}
		return virtkit.Decode(bytes.NewReader(demoManifests))
	}
	return manifest.Decode(os.Stdin, files)
}

func writeFinalObjects(ctx context.Context, w io.Writer, st store.Store) error {
	var vms virtkit.VirtualMachineList
	var vmis virtkit.VirtualMachineInstanceList
	var rss virtkit.VirtualMachineInstanceReplicaSetList
	var migs virtkit.VirtualMachineInstanceMigrationList
	var nodes virtkit.NodeList
	for _, l := range []virtkit.ObjectList{&vms, &vmis, &rss, &migs, &nodes} {
		if err := st.List(ctx, l, store.ListOptions{}); err != nil {
			return err
		}
	}
	doc := map[string]any{
		"virtualMachines":         vms.Items,
		"virtualMachineInstances": vmis.Items,
		"replicaSets":             rss.Items,
		"migrations":              migs.Items,
		"nodes":                   nodes.Items,
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
