package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/cdi/upload"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

// apiFlags are the controller's API server flags.
type apiFlags struct {
	addr       string
	certDir    string
	hosts      []string
	tokenFile  string
	policyFile string
	kubeconfig string
	// maxStreams, maxStreamsPerUser bound the open console, VNC and
	// port-forward streams (0: the server's defaults).
	maxStreams, maxStreamsPerUser int
	// maxWatchesPerUser bounds one user's open watches (0: the server's
	// default).
	maxWatchesPerUser int
	// maxInFlight and maxConnections bound the requests and connections
	// (0: the server's defaults).
	maxInFlight, maxConnections int
	// uploadAddr serves the upload proxy; uploads takes the uploads to
	// this process's nodes (its cluster, nil for a controller alone); the
	// others go to the endpoints of the `virtkit node` processes.
	uploadAddr string
	uploads    upload.Receiver
}

func (f *apiFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.addr, "api-addr", "", "serve the Kubernetes API (kubectl, client-go) over TLS on this address, e.g. 127.0.0.1:6443")
	fs.StringVar(&f.certDir, "api-cert-dir", "",
		"directory of the API's CA, serving and admin certificates, generated when missing (default: USER-CONFIG-DIR/virtkit/pki)")
	fs.StringSliceVar(&f.hosts, "api-cert-hosts", nil, "extra host names and IPs the generated serving certificate covers")
	fs.StringVar(&f.tokenFile, "api-token-file", "", `bearer tokens, kube-apiserver's format: token,user,uid,"group1,group2" per line`)
	fs.StringVar(&f.policyFile, "api-policy-file", "",
		"authorization policy: RBAC Roles, ClusterRoles and their bindings (YAML or JSON), or rules {rules: [{user|group, namespaces, verbs, resources}]}; "+
			"without it only "+apiserver.AdminGroup+" members (and the control plane and node agents) are allowed beyond discovery")
	fs.StringVar(&f.kubeconfig, "write-kubeconfig", "", "write an admin kubeconfig for the API to this path")
	fs.IntVar(&f.maxStreams, "api-max-streams", 0,
		fmt.Sprintf("console, vnc and port-forward streams open at once, more are refused with 429 TooManyRequests (0: %d)", apiserver.DefaultMaxStreams))
	fs.IntVar(&f.maxStreamsPerUser, "api-max-streams-per-user", 0,
		fmt.Sprintf("one user's console, vnc and port-forward streams open at once (0: %d)", apiserver.DefaultMaxStreamsPerUser))
	fs.IntVar(&f.maxWatchesPerUser, "api-max-watches-per-user", 0,
		fmt.Sprintf("one user's watches open at once, more are refused with 429 TooManyRequests; %s members are not counted (0: %d)",
			apiserver.AdminGroup, apiserver.DefaultMaxWatchesPerUser))
	fs.IntVar(&f.maxInFlight, "api-max-requests-inflight", 0,
		"requests served at once, watches and streams apart; more are refused with 429 TooManyRequests (0: the API server library's default, 400)")
	fs.StringVar(&f.uploadAddr, "uploadproxy-addr", "",
		"serve CDI's upload proxy (virtctl image-upload --uploadproxy-url) over TLS on this address, with the API's serving certificate; needs --api-addr")
	fs.IntVar(&f.maxConnections, "api-max-connections", 0,
		fmt.Sprintf("connections open at once, more are closed when accepted (0: %d)", apiserver.DefaultMaxConnections))
}

// options validates the flags and turns them into the library's options:
// ok is false without --api-addr.
func (f *apiFlags) options() (opts cluster.APIServerOptions, ok bool, err error) {
	if f.addr == "" {
		if f.uploadAddr != "" {
			return opts, false, errors.New("--uploadproxy-addr: need --api-addr (the API server issues the upload tokens)")
		}
		if f.kubeconfig != "" || f.tokenFile != "" || f.policyFile != "" {
			return opts, false, errors.New("--write-kubeconfig, --api-token-file, --api-policy-file: need --api-addr")
		}
		return opts, false, nil
	}
	if f.maxStreams < 0 {
		return opts, false, fmt.Errorf("--api-max-streams: %d: must not be negative", f.maxStreams)
	}
	if f.maxStreamsPerUser < 0 {
		return opts, false, fmt.Errorf("--api-max-streams-per-user: %d: must not be negative", f.maxStreamsPerUser)
	}
	if f.maxWatchesPerUser < 0 {
		return opts, false, fmt.Errorf("--api-max-watches-per-user: %d: must not be negative", f.maxWatchesPerUser)
	}
	return cluster.APIServerOptions{
		Addr: f.addr, CertDir: f.certDir, CertHosts: f.hosts, TokenFile: f.tokenFile, PolicyFile: f.policyFile,
		Kubeconfig: f.kubeconfig, MaxStreams: f.maxStreams, MaxStreamsPerUser: f.maxStreamsPerUser, MaxWatchesPerUser: f.maxWatchesPerUser,
		MaxRequestsInFlight: f.maxInFlight, MaxConnections: f.maxConnections,
		UploadProxyAddr: f.uploadAddr, Uploads: f.uploads,
	}, true, nil
}

// start serves the API (cluster.StartAPIServer) until ctx ends or stop is
// called; without --api-addr it does nothing. guest, when not nil, answers
// the guest-agent subresources; the node agents of local (this process's)
// serve their endpoints on loopback.
func (f *apiFlags) start(ctx context.Context, st store.Store, defaults virtkit.DefaultOptions, guest apiserver.GuestInfo,
	local []*cluster.Node, log *slog.Logger, stderr io.Writer) (stop func(), err error) {
	opts, ok, err := f.options()
	if err != nil || !ok {
		return func() {}, err
	}
	opts.Store, opts.Defaults, opts.GuestInfo, opts.LocalNodes, opts.Logger = st, defaults, guest, local, log
	srv, err := cluster.StartAPIServer(ctx, opts)
	if err != nil {
		return nil, err
	}
	if srv.UploadProxyURL != "" {
		fmt.Fprintf(stderr, "uploadproxy: %s\n", srv.UploadProxyURL)
	}
	fmt.Fprintf(stderr, "api: %s\n", srv.URL)
	return func() {
		if err := srv.Stop(); err != nil {
			fmt.Fprintf(stderr, "%v\n", err)
		}
	}, nil
}
