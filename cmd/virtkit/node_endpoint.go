package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/node"
)

// endpointFlags are the node agent's endpoint flags.
type endpointFlags struct {
	addr           string
	certDir        string
	host           string
	allowedDialing []string
}

func (f *endpointFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.addr, "endpoint-addr", "",
		"serve the node endpoint (console, VNC, port-forward and guest info for the API server; mutual TLS) on this address, e.g. 127.0.0.1:0")
	fs.StringVar(&f.certDir, "endpoint-cert-dir", "",
		"directory with the cluster CA (ca.crt) and this node's certificate node-NAME.crt/.key; with the CA key (ca.key) there, a missing certificate is issued (default: the controller's USER-CONFIG-DIR/virtkit/pki)")
	fs.StringVar(&f.host, "endpoint-host", "",
		"host name or IP the API server reaches the endpoint at, published on the Node (default: the listen address; loopback for a wildcard)")
	fs.StringSliceVar(&f.allowedDialing, "portforward-allowed-networks", nil,
		"CIDRs a port-forward may dial at addresses the VMI's status lists although the node did not assign them (guest-agent reports), loopback and link-local included; by default only addresses the node's network assigned")
}

// endpoint opens the node endpoint's listener and TLS configuration from
// the flags; nil without --endpoint-addr.
func (f *endpointFlags) endpoint(ctx context.Context, name string) (*cluster.NodeEndpoint, error) {
	if f.addr == "" {
		if f.certDir != "" || f.host != "" {
			return nil, errors.New("--endpoint-cert-dir, --endpoint-host: need --endpoint-addr")
		}
		return nil, nil
	}
	allowed, err := parsePrefixes("--portforward-allowed-networks", f.allowedDialing)
	if err != nil {
		return nil, err
	}
	dir := f.certDir
	if dir == "" {
		if dir, err = cluster.DefaultCertDir(); err != nil {
			return nil, fmt.Errorf("--endpoint-cert-dir: %w", err)
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", f.addr)
	if err != nil {
		return nil, fmt.Errorf("--endpoint-addr: %w", err)
	}
	hostPort := cluster.DialAddr(ln.Addr())
	host, port, _ := net.SplitHostPort(hostPort)
	if f.host != "" {
		host = f.host
	}
	caPEM, certPEM, keyPEM, err := apiserver.EnsureNodeCertificates(dir, name, []string{host})
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("--endpoint-cert-dir %s: %w", dir, err)
	}
	cfg, err := node.EndpointTLSConfig(caPEM, certPEM, keyPEM)
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("--endpoint-cert-dir %s: %w", dir, err)
	}
	return &cluster.NodeEndpoint{Listener: ln, TLS: cfg, URL: "https://" + net.JoinHostPort(host, port),
		Options: node.EndpointOptions{AllowedNetworks: allowed}}, nil
}

// parsePrefixes parses a flag's CIDRs (a bare address is a /32 or /128).
func parsePrefixes(flag string, vals []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(vals))
	for _, v := range vals {
		p, err := netip.ParsePrefix(v)
		if err != nil {
			a, aerr := netip.ParseAddr(v)
			if aerr != nil {
				return nil, fmt.Errorf("%s: %q: want a CIDR such as 10.0.0.0/8: %w", flag, v, err)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
