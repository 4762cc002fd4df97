package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/virtkit/virtkit/hypervisor/libvirt"
	"github.com/virtkit/virtkit/migration/bench"
	"github.com/virtkit/virtkit/migration/bench/realqemu"
)

// userfaultfdSysctl must be 1 for post-copy: QEMU runs as libvirt-qemu.
const userfaultfdSysctl = "/proc/sys/vm/unprivileged_userfaultfd"

// withRealQEMU adds --hypervisor libvirt (and its flags) to `bench
// migrate`: the same profiles and policies on the real tiny guest between
// two libvirt daemons. The simulated run stays the default.
func withRealQEMU(cmd *cobra.Command) *cobra.Command {
	var (
		hv, uris, migrateURI, link string
		guestKind, cloudImage      string
		maxTime, samplePasses      time.Duration
		parallel, repeat           int
		tls, logDecisions          bool
	)
	f := cmd.Flags()
	f.StringVar(&hv, "hypervisor", "sim", "sim (virtual clock) or libvirt (the real tiny guest between two libvirt daemons, real time)")
	f.StringVar(&uris, "uri", sourceURI+","+peerURI, "with --hypervisor libvirt: SOURCE,TARGET libvirt URIs (the guest boots on SOURCE and migrates to TARGET)")
	f.StringVar(&migrateURI, "migrate-uri", "tcp://127.0.0.1", "with --hypervisor libvirt: the migration data connection (empty: libvirt's choice)")
	f.DurationVar(&maxTime, "max-time", 90*time.Second, "with --hypervisor libvirt: a migration still running after this is aborted and reported as capped")
	f.IntVar(&parallel, "parallel-connections", 0, "with --hypervisor libvirt: multifd connections for every policy (0 or 1: one stream)")
	f.StringVar(&link, "link-bandwidth", "", "with --hypervisor libvirt: the capacity of the migration link (a quantity per second, e.g. 1Gi; 0 = unknown); default: measured over TCP when --migrate-uri names a local address")
	f.DurationVar(&samplePasses, "sample-passes", 0, "with --hypervisor libvirt: also read every job's stats at this period (e.g. 20ms) and report where each iteration began (JSON \"passes\"; the data behind the simulator's validation)")
	f.IntVar(&repeat, "repeat", 1, "with --hypervisor libvirt: run every profile under every policy this many times, each run starting the policies one further along (the table adds medians and ranges; JSON rows carry their run)")
	f.BoolVar(&logDecisions, "log-decisions", false, "with --hypervisor libvirt: write every engine decision (and each migration's end) to stderr as it is taken")
	f.StringVar(&guestKind, "guest", realqemu.GuestTiny, "with --hypervisor libvirt: the real guest, tiny (hack/realstack/build-guest.sh, its own dirtier) or debian (the Debian 12 cloud image of hack/realstack/build-cloud-image.sh running stress-ng)")
	f.StringVar(&cloudImage, "cloud-image", "", "with --guest debian: the cloud image's directory (default: build/cloud-image in the working directory or above); each run boots a raw copy of its disk written beside it in build/realqemu")
	f.BoolVar(&tls, "tls", false, "with --hypervisor libvirt: encrypt every migration (the daemons need migrate-TLS certificates: hack/realstack/libvirtd.sh makes them)")
	cmd.Long += `

With --hypervisor libvirt the profiles run on real QEMU: the tiny guest of
hack/realstack (build-guest.sh; daemons from libvirtd.sh start) boots on the
first --uri with the profile's memory (128Mi..1Gi), its dirtier realises
dirtyRate over workingSet, and the migration's maximum speed realises the
bandwidth. Shapes other than uniform/sequential, dips and bursts cannot be
realised and are refused. Without --profiles it runs four real profiles
(idle, convergent, throttle-needed, hopeless). With --guest debian the
profiles run on the 1 GiB Debian cloud image instead, their dirtyRate and
workingSet realised by Debian's stress-ng (--vm-bytes the working set,
--vm-hang the pause that brings a pass down to the rate); without
--profiles, two (debian-stress-bursty, debian-stress-hog). Each run takes real time:
about 10 s of boot plus the migration, capped by --max-time. Real runs are
noisy: --repeat N runs the whole set N times, rotating the order of the
policies, and the table adds each cell's median and range.`
	simRun := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		switch hv {
		case "sim":
			for _, name := range []string{"uri", "migrate-uri", "max-time", "parallel-connections", "tls", "link-bandwidth", "repeat", "sample-passes", "log-decisions", "guest", "cloud-image"} {
				if c.Flags().Changed(name) {
					return fmt.Errorf("--%s: only with --hypervisor libvirt", name)
				}
			}
			return simRun(c, args)
		case "libvirt":
			return runRealBench(c, realGuest{kind: guestKind, cloudImage: cloudImage}, uris, migrateURI, link, maxTime, samplePasses, parallel, repeat, tls, logDecisions)
		}
		return fmt.Errorf("--hypervisor: %q is not sim or libvirt", hv)
	}
	return cmd
}

// realGuest is --guest and --cloud-image.
type realGuest struct{ kind, cloudImage string }

func runRealBench(c *cobra.Command, rg realGuest, uris, migrateURI, link string, maxTime, samplePasses time.Duration, parallel, repeat int, tls, logDecisions bool) error {
	flags := c.Flags()
	if rg.kind != realqemu.GuestTiny && rg.kind != realqemu.GuestDebian {
		return fmt.Errorf("--guest: %q is not %s or %s", rg.kind, realqemu.GuestTiny, realqemu.GuestDebian)
	}
	if rg.cloudImage != "" && rg.kind != realqemu.GuestDebian {
		return fmt.Errorf("--cloud-image: only with --guest %s", realqemu.GuestDebian)
	}
	for _, name := range []string{"plot", "plot-profile", "plot-summary", "capabilities", "qemu-auto-converge"} {
		if flags.Changed(name) {
			return fmt.Errorf("--%s: only with --hypervisor sim", name)
		}
	}
	hosts := strings.Split(uris, ",")
	if len(hosts) != 2 || hosts[0] == "" || hosts[1] == "" {
		return fmt.Errorf("--uri: %q: want SOURCE,TARGET", uris)
	}
	if maxTime <= 0 {
		return fmt.Errorf("--max-time: %v must be positive", maxTime)
	}
	if parallel < 0 {
		return fmt.Errorf("--parallel-connections: %d is negative", parallel)
	}
	if samplePasses < 0 {
		return fmt.Errorf("--sample-passes: %v is negative", samplePasses)
	}
	if repeat < 1 {
		return fmt.Errorf("--repeat: %d: want 1 or more", repeat)
	}
	profilesFile, _ := flags.GetString("profiles")
	policyList, _ := flags.GetString("policies")
	output, _ := flags.GetString("output")
	if output != "table" && output != "json" {
		return fmt.Errorf("--output: %q is not table or json", output)
	}
	var (
		profiles []bench.Profile
		err      error
	)
	if profilesFile != "" {
		data, err := os.ReadFile(profilesFile)
		if err != nil {
			return fmt.Errorf("--profiles: %w", err)
		}
		if profiles, err = bench.DecodeProfiles(data); err != nil {
			return fmt.Errorf("--profiles %s: %w", profilesFile, err)
		}
	} else if rg.kind == realqemu.GuestDebian {
		if profiles, err = realqemu.BuiltinDebianProfiles(); err != nil {
			return err
		}
	} else if profiles, err = realqemu.BuiltinProfiles(); err != nil {
		return err
	}
	if err := realqemu.RealisableOn(rg.kind, profiles); err != nil {
		return fmt.Errorf("--profiles: %w", err)
	}
	var policies []string
	for _, p := range strings.Split(policyList, ",") {
		if p = strings.TrimSpace(p); p != "" {
			if _, err := bench.NewPolicy(p); err != nil {
				return fmt.Errorf("--policies: %w", err)
			}
			policies = append(policies, p)
		}
	}
	if len(policies) == 0 {
		return fmt.Errorf("--policies: empty")
	}
	for i, p := range profiles {
		if !p.AllowPostCopy {
			continue
		}
		if v, err := os.ReadFile(userfaultfdSysctl); err != nil || !bytes.Equal(bytes.TrimSpace(v), []byte("1")) {
			return fmt.Errorf("profiles[%d].allowPostCopy: QEMU runs as libvirt-qemu and post-copy needs userfaultfd for unprivileged users (sysctl -w vm.unprivileged_userfaultfd=1)", i)
		}
	}
	linkBandwidth, err := parseLinkBandwidth(link)
	if err != nil {
		return err
	}
	opts := realqemu.Options{Guest: rg.kind}
	if rg.kind == realqemu.GuestDebian {
		dir := rg.cloudImage
		if dir == "" {
			if dir, err = findBuildDir("cloud-image", "disk.qcow2"); err != nil {
				return fmt.Errorf("--guest debian: %w (build it with hack/realstack/build-cloud-image.sh)", err)
			}
		}
		if opts.CloudImage, err = realqemu.CloudImageIn(dir); err != nil {
			return fmt.Errorf("--cloud-image %s: %w (build it with hack/realstack/build-cloud-image.sh)", dir, err)
		}
		opts.ScratchDir = filepath.Join(filepath.Dir(filepath.Clean(dir)), "realqemu")
	} else {
		guest, err := findTinyGuest()
		if err != nil {
			return fmt.Errorf("--hypervisor libvirt: %w (build it with hack/realstack/build-guest.sh)", err)
		}
		opts.Kernel, opts.Initrd = guest.Kernel, guest.Initrd
	}
	ctx := c.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	src, err := libvirt.New(ctx, libvirt.Options{URI: hosts[0]})
	if err != nil {
		return fmt.Errorf("--uri %s: %w", hosts[0], err)
	}
	defer func() { _ = src.Close() }()
	dst, err := libvirt.New(ctx, libvirt.Options{URI: hosts[1]})
	if err != nil {
		return fmt.Errorf("--uri %s: %w", hosts[1], err)
	}
	defer func() { _ = dst.Close() }()
	if link == "" {
		if linkBandwidth, err = measureLocalLink(ctx, migrateURI); err != nil {
			return fmt.Errorf("--link-bandwidth: %w", err)
		}
		if linkBandwidth > 0 {
			fmt.Fprintf(c.ErrOrStderr(), "migration link (%s): %.0f MiB/s measured over TCP\n", migrateURI, linkBandwidth/(1<<20))
		}
	}
	opts.LinkBandwidth = linkBandwidth
	opts.Source, opts.Target, opts.TargetURI, opts.MigrateURI = src, dst, migrationURIOf(hosts[1]), migrateURI
	opts.MaxTime, opts.ParallelConnections, opts.TLS = maxTime, parallel, tls
	opts.Progress, opts.SamplePasses = c.ErrOrStderr(), samplePasses
	if logDecisions {
		opts.Logger = slog.New(slog.NewTextHandler(c.ErrOrStderr(), nil))
	}
	var rows []bench.Row
	for run := range repeat {
		order := rotate(policies, run)
		if repeat > 1 {
			fmt.Fprintf(c.ErrOrStderr(), "run %d of %d: %s\n", run+1, repeat, strings.Join(order, ", "))
		}
		got, err := realqemu.Run(ctx, profiles, order, opts)
		if err != nil {
			return err
		}
		if repeat > 1 {
			for i := range got {
				got[i].Run = run + 1
			}
		}
		rows = append(rows, got...)
	}
	out := c.OutOrStdout()
	if output == "json" {
		return bench.WriteJSON(out, rows)
	}
	if err := bench.WriteTable(out, rows); err != nil || repeat == 1 {
		return err
	}
	fmt.Fprintf(out, "\nMedians and ranges over %d runs:\n", repeat)
	return bench.WriteSummaryTable(out, bench.Summarize(rows))
}

// rotate returns xs started k places further along (wrapping), so that
// repeated runs do not always give the same policy the same slot.
func rotate(xs []string, k int) []string {
	k %= len(xs)
	return append(slices.Clone(xs[k:]), xs[:k]...)
}

// parseLinkBandwidth reads --link-bandwidth: empty = measure, else a
// quantity of bytes per second (0 = unknown).
func parseLinkBandwidth(s string) (float64, error) {
	if s == "" {
		return 0, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("--link-bandwidth: %q: %w", s, err)
	}
	if q.Sign() < 0 {
		return 0, fmt.Errorf("--link-bandwidth: %q is negative", s)
	}
	return q.AsApproximateFloat64(), nil
}

// measureLocalLink measures the link when the migrate URI names a local
// address (the two daemons on one machine); otherwise the link stays
// unknown (0).
func measureLocalLink(ctx context.Context, migrateURI string) (float64, error) {
	u, err := url.Parse(migrateURI)
	if migrateURI == "" || err != nil {
		return 0, nil
	}
	ip, err := netip.ParseAddr(u.Hostname())
	if err != nil || !ip.IsLoopback() {
		return 0, nil
	}
	return realqemu.MeasureLink(ctx, ip.String())
}

// findBuildDir finds build/NAME (holding file) in the working directory
// or above.
func findBuildDir(name, file string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		dir := filepath.Join(d, "build", name)
		if _, err := os.Stat(filepath.Join(dir, file)); err == nil {
			return dir, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no build/%s/%s in %s or above", name, file, wd)
		}
	}
}
