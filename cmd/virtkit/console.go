package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// streamSubprotocol is KubeVirt's WebSocket subprotocol for the streams.
const streamSubprotocol = "plain.kubevirt.io"

// consoleEscape is ^] (virtctl's escape sequence).
const consoleEscape = 0x1d

// dialStream opens a VMI stream subresource (console, vnc,
// portforward/PORT[/PROTO]) of the API over WebSocket.
func dialStream(ctx context.Context, c *apiClient, name, sub string) (*websocket.Conn, error) {
	tlsCfg, err := rest.TLSConfigFor(c.config)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	base, err := url.Parse(c.config.Host)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: server %q: %w", c.config.Host, err)
	}
	switch base.Scheme {
	case "https", "":
		base.Scheme = "wss"
	case "http":
		base.Scheme = "ws"
	}
	base.Path = strings.TrimSuffix(base.Path, "/") + subresourcesPath + "/namespaces/" + url.PathEscape(c.namespace) +
		"/virtualmachineinstances/" + url.PathEscape(name) + "/" + sub
	header := http.Header{}
	tok := c.config.BearerToken
	if tok == "" && c.config.BearerTokenFile != "" {
		b, err := os.ReadFile(c.config.BearerTokenFile)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig: token file: %w", err)
		}
		tok = strings.TrimSpace(string(b))
	}
	if tok != "" {
		header.Set("Authorization", "Bearer "+tok)
	}
	d := websocket.Dialer{TLSClientConfig: tlsCfg, Subprotocols: []string{streamSubprotocol},
		HandshakeTimeout: 30 * time.Second, Proxy: http.ProxyFromEnvironment}
	ws, resp, err := d.DialContext(ctx, base.String(), header)
	if err != nil {
		if resp != nil {
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			var st metav1.Status
			if json.Unmarshal(body, &st) == nil && st.Kind == "Status" {
				return nil, &apierrors.StatusError{ErrStatus: st}
			}
			return nil, fmt.Errorf("%s: the server answered %s: %s", sub, resp.Status, bytes.TrimSpace(body))
		}
		return nil, fmt.Errorf("%s: %w", sub, err)
	}
	ws.SetReadLimit(1 << 20)
	return ws, nil
}

func newConsoleCmd() *cobra.Command {
	var (
		kf      kubeFlags
		ns      namespaceFlags
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "console VMI",
		Short: "Connect to a guest's serial console",
		Long: `console attaches the terminal to the serial console of a running VMI, through
the API (subresource console, proxied to the node agent that runs the guest).
Type ^] (Ctrl+]) to detach; the guest keeps running. Standard input that is not
a terminal is sent as it is, and the command ends when it ends or the console
closes.` + virtctlLong,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := kf.connect(cmd)
			if err != nil {
				return apiFail(cmd, err)
			}
			dctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			ws, err := dialStream(dctx, c, args[0], "console")
			cancel()
			if err != nil {
				return apiFail(cmd, err)
			}
			stdin := cmd.InOrStdin()
			if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
				old, err := term.MakeRaw(int(f.Fd()))
				if err == nil {
					defer func() { _ = term.Restore(int(f.Fd()), old) }()
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "Successfully connected to %s console. The escape sequence is ^]\r\n", esc(args[0]))
			}
			return apiFail(cmd, runConsole(cmd.Context(), ws, stdin, cmd.OutOrStdout()))
		},
	}
	cmd.ValidArgsFunction = completeNames(&kf, "vmis")
	kf.register(cmd)
	ns.register(cmd, false)
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "how long to wait for the console to connect")
	return cmd
}

// runConsole copies stdin to the console until ^] or stdin's end, and the
// console to stdout until it closes.
func runConsole(ctx context.Context, ws *websocket.Conn, stdin io.Reader, stdout io.Writer) error {
	defer ws.Close()
	errc := make(chan error, 2)
	go func() {
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				errc <- err
				return
			}
			if _, err := stdout.Write(data); err != nil {
				errc <- err
				return
			}
		}
	}()
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := stdin.Read(buf)
			if i := bytes.IndexByte(buf[:n], consoleEscape); i >= 0 {
				if i > 0 {
					_ = ws.WriteMessage(websocket.BinaryMessage, buf[:i])
				}
				errc <- nil
				return
			}
			if n > 0 {
				if werr := ws.WriteMessage(websocket.BinaryMessage, buf[:n]); werr != nil {
					errc <- werr
					return
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					// Give the guest a moment to answer what was sent.
					time.Sleep(500 * time.Millisecond)
					err = nil
				}
				errc <- err
				return
			}
		}
	}()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	if err == nil || websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway) {
		return nil
	}
	return err
}
