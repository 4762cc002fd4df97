package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit/node"
)

// vncViewers are the viewers vnc launches, first found wins, with how each
// takes the address.
var vncViewers = []struct {
	bin  string
	args func(port int) []string
}{
	{"remote-viewer", func(port int) []string { return []string{fmt.Sprintf("vnc://127.0.0.1:%d", port)} }},
	{"vncviewer", func(port int) []string { return []string{fmt.Sprintf("127.0.0.1::%d", port)} }},
}

func newVNCCmd() *cobra.Command {
	var (
		kf        kubeFlags
		ns        namespaceFlags
		proxyOnly bool
		port      int
		shot      string
	)
	cmd := &cobra.Command{
		Use:   "vnc VMI",
		Short: "Open a guest's VNC display",
		Long: `vnc serves the VNC display of a running VMI on a local port (127.0.0.1, --port,
default any free port), through the API (subresource vnc) and the node agent
that runs the guest, and launches a viewer on it (remote-viewer or vncviewer,
the first found). With --proxy-only it prints {"port": N} and serves until
interrupted, for any VNC client. With --screenshot FILE it writes one full
frame of the display to FILE as PNG and exits.` + virtctlLong,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if port < 0 || port > 65535 {
				return apiFail(cmd, fmt.Errorf("--port: %d is not a port", port))
			}
			if shot != "" {
				if proxyOnly || port != 0 {
					return apiFail(cmd, errors.New("--screenshot: serves no port, so not with --proxy-only or --port"))
				}
				c, err := kf.connect(cmd)
				if err != nil {
					return apiFail(cmd, err)
				}
				ws, err := dialStream(cmd.Context(), c, args[0], "vnc")
				if err != nil {
					return apiFail(cmd, err)
				}
				return apiFail(cmd, screenshot(cmd.Context(), ws, shot))
			}
			var viewer string
			var viewerArgs func(int) []string
			if !proxyOnly {
				for _, v := range vncViewers {
					if p, err := exec.LookPath(v.bin); err == nil {
						viewer, viewerArgs = p, v.args
						break
					}
				}
				if viewer == "" {
					return apiFail(cmd, errors.New("no VNC viewer found (remote-viewer, vncviewer): install one or use --proxy-only or --screenshot"))
				}
			}
			c, err := kf.connect(cmd)
			if err != nil {
				return apiFail(cmd, err)
			}
			ctx := cmd.Context()
			// Fail early when the display cannot be reached at all.
			ws, err := dialStream(ctx, c, args[0], "vnc")
			if err != nil {
				return apiFail(cmd, err)
			}
			_ = ws.Close()
			var lc net.ListenConfig
			ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				return apiFail(cmd, fmt.Errorf("--port: %w", err))
			}
			got := ln.Addr().(*net.TCPAddr).Port
			lctx, cancel := context.WithCancel(ctx)
			defer cancel()
			open := func(ctx context.Context) (func(io.ReadWriteCloser) error, error) {
				ws, err := dialStream(ctx, c, args[0], "vnc")
				if err != nil {
					return nil, err
				}
				return func(rwc io.ReadWriteCloser) error { return node.Pump(lctx, ws, rwc, false) }, nil
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			done := make(chan struct{})
			go func() { defer close(done); forwardListener(lctx, ln, open, log) }()
			if proxyOnly {
				out, _ := json.Marshal(map[string]int{"port": got})
				fmt.Fprintln(cmd.OutOrStdout(), string(out))
				<-done
				return nil
			}
			v := exec.CommandContext(ctx, viewer, viewerArgs(got)...)
			v.Stdout, v.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			err = v.Run()
			cancel()
			<-done
			if err != nil {
				return apiFail(cmd, fmt.Errorf("%s: %w", viewer, err))
			}
			return nil
		},
	}
	cmd.ValidArgsFunction = completeNames(&kf, "vmis")
	kf.register(cmd)
	ns.register(cmd, false)
	cmd.Flags().BoolVar(&proxyOnly, "proxy-only", false, `only serve the local port and print {"port": N}; launch no viewer`)
	cmd.Flags().IntVar(&port, "port", 0, "local port (0: any free port)")
	cmd.Flags().StringVar(&shot, "screenshot", "", "write one frame of the display to this PNG file and exit")
	return cmd
}
