package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit/node"
)

// portPair is one LOCAL:REMOTE of port-forward.
type portPair struct{ local, remote int }

// parsePortPairs parses PORT or LOCAL:REMOTE arguments (LOCAL 0: any free
// port).
func parsePortPairs(args []string) ([]portPair, error) {
	var out []portPair
	for _, a := range args {
		l, r, ok := strings.Cut(a, ":")
		if !ok {
			r = l
		}
		lp, err1 := strconv.Atoi(l)
		rp, err2 := strconv.Atoi(r)
		if err1 != nil || err2 != nil || lp < 0 || lp > 65535 || rp < 1 || rp > 65535 {
			return nil, fmt.Errorf("port %q: want PORT or LOCAL:REMOTE (ports 1-65535, LOCAL 0 for any)", a)
		}
		out = append(out, portPair{lp, rp})
	}
	return out, nil
}

// parseVMITarget accepts vmi/NAME, vm/NAME (its instance has its name) or
// NAME.
func parseVMITarget(s string) (string, error) {
	kind, name, ok := strings.Cut(s, "/")
	if !ok {
		return s, nil
	}
	switch strings.ToLower(kind) {
	case "vmi", "vmis", "virtualmachineinstance", "vm", "vms", "virtualmachine":
	default:
		return "", fmt.Errorf("%q: want vmi/NAME or vm/NAME", s)
	}
	if name == "" {
		return "", fmt.Errorf("%q: name required", s)
	}
	return name, nil
}

func newPortForwardCmd() *cobra.Command {
	var (
		kf      kubeFlags
		ns      namespaceFlags
		address string
		stdio   bool
	)
	cmd := &cobra.Command{
		Use:   "port-forward (vmi|vm)/NAME [LOCAL:]REMOTE...",
		Short: "Forward local ports to a guest's ports",
		Long: `port-forward listens on local ports (--address, default 127.0.0.1) and forwards
each connection to a port of the guest, through the API (subresource
portforward) and the node agent that runs it, which connects to the guest's
address on its pod network. A guest behind QEMU's user-mode NAT has no address
the node can reach. With --stdio one REMOTE port is forwarded over standard
input and output (an ssh ProxyCommand).` + virtctlLong,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := parseVMITarget(args[0])
			if err != nil {
				return apiFail(cmd, err)
			}
			pairs, err := parsePortPairs(args[1:])
			if err != nil {
				return apiFail(cmd, err)
			}
			c, err := kf.connect(cmd)
			if err != nil {
				return apiFail(cmd, err)
			}
			ctx := cmd.Context()
			// open dials the guest's port within dialCtx; the stream it
			// returns is pumped until ctx ends.
			open := func(dialCtx, ctx context.Context, remote int) (func(io.ReadWriteCloser) error, error) {
				ws, err := dialStream(dialCtx, c, name, "portforward/"+strconv.Itoa(remote))
				if err != nil {
					return nil, err
				}
				return func(rwc io.ReadWriteCloser) error { return node.Pump(ctx, ws, rwc, false) }, nil
			}
			if stdio {
				if len(pairs) != 1 {
					return apiFail(cmd, errors.New("--stdio: give exactly one port"))
				}
				pump, err := open(ctx, ctx, pairs[0].remote)
				if err != nil {
					return apiFail(cmd, err)
				}
				return apiFail(cmd, pump(stdioConn{cmd.InOrStdin(), cmd.OutOrStdout()}))
			}
			var wg sync.WaitGroup
			lctx, cancel := context.WithCancel(ctx)
			defer func() { cancel(); wg.Wait() }()
			for _, p := range pairs {
				var lc net.ListenConfig
				ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(address, strconv.Itoa(p.local)))
				if err != nil {
					return apiFail(cmd, fmt.Errorf("port %d: %w", p.local, err))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Forwarding from %s -> %d\n", ln.Addr(), p.remote)
				wg.Go(func() {
					forwardListener(lctx, ln, func(dialCtx context.Context) (func(io.ReadWriteCloser) error, error) {
						// The dial has its own deadline; the connection
						// lives as long as the listener.
						return open(dialCtx, lctx, p.remote)
					}, slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)))
				})
			}
			<-ctx.Done()
			return nil
		},
	}
	cmd.ValidArgsFunction = completeNames(&kf, "vmis")
	kf.register(cmd)
	ns.register(cmd, false)
	cmd.Flags().StringVar(&address, "address", "127.0.0.1", "local address to listen on")
	cmd.Flags().BoolVar(&stdio, "stdio", false, "forward one port over standard input and output instead of listening")
	return cmd
}

// forwardListener accepts connections on ln until ctx ends and pumps each
// through a stream open returns; open's context bounds only the dial.
func forwardListener(ctx context.Context, ln net.Listener, open func(context.Context) (func(io.ReadWriteCloser) error, error), log *slog.Logger) {
	go func() { <-ctx.Done(); _ = ln.Close() }()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		wg.Go(func() {
			defer conn.Close()
			octx, cancel := context.WithTimeout(ctx, time.Minute)
			pump, err := open(octx)
			cancel()
			if err != nil {
				log.Error("forward", "err", err)
				return
			}
			if err := pump(conn); err != nil {
				log.Debug("forward ended", "err", err)
			}
		})
	}
}

// stdioConn is standard input and output as one stream.
type stdioConn struct {
	io.Reader
	io.Writer
}

func (stdioConn) Close() error { return nil }
