package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd"
)

// errBadStoreFlag wraps every malformed --store* flag.
var errBadStoreFlag = errors.New("invalid store flag")

// storeFlags are the flags every command that talks to a control plane
// shares: which store, and how to reach etcd.
type storeFlags struct {
	store    string
	prefix   string
	cacert   string
	cert     string
	key      string
	user     string
	password string
}

func (f *storeFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.store, "store", "memory",
		"object store: memory (this process only) or etcd://HOST:PORT[,HOST:PORT...] (etcds:// for TLS)")
	fs.StringVar(&f.prefix, "etcd-prefix", etcd.DefaultPrefix, "etcd key prefix of virtkit's objects (and of the leader election key)")
	fs.StringVar(&f.cacert, "etcd-cacert", "", "PEM file of the CA that signed etcd's server certificate (enables TLS)")
	fs.StringVar(&f.cert, "etcd-cert", "", "PEM client certificate for etcd (with --etcd-key)")
	fs.StringVar(&f.key, "etcd-key", "", "PEM client key for etcd (with --etcd-cert)")
	fs.StringVar(&f.user, "etcd-user", "", "etcd user name (etcd auth)")
	fs.StringVar(&f.password, "etcd-password", "", "etcd password (etcd auth)")
}

// isMemory reports whether the flags select the in-process memory store.
func (f *storeFlags) isMemory() bool { return f.store == "" || f.store == "memory" }

// etcdOptions turns the flags into store/etcd options. It fails for
// --store memory.
func (f *storeFlags) etcdOptions() (etcd.Options, error) {
	scheme, hosts, ok := strings.Cut(f.store, "://")
	if !ok || (scheme != "etcd" && scheme != "etcds") {
		return etcd.Options{}, fmt.Errorf("--store: %w: %q is neither memory nor etcd://HOST:PORT[,...]", errBadStoreFlag, f.store)
	}
	useTLS := scheme == "etcds" || f.cacert != "" || f.cert != ""
	urlScheme := "http://"
	if useTLS {
		urlScheme = "https://"
	}
	var endpoints []string
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if strings.ContainsAny(h, "/?#@") || !strings.Contains(h, ":") {
			return etcd.Options{}, fmt.Errorf("--store: %w: endpoint %q is not HOST:PORT", errBadStoreFlag, h)
		}
		endpoints = append(endpoints, urlScheme+h)
	}
	if len(endpoints) == 0 {
		return etcd.Options{}, fmt.Errorf("--store: %w: no etcd endpoint in %q", errBadStoreFlag, f.store)
	}
	opts := etcd.Options{Endpoints: endpoints, Prefix: f.prefix, Username: f.user, Password: f.password}
	if f.password != "" && f.user == "" {
		return etcd.Options{}, fmt.Errorf("--etcd-password: %w: needs --etcd-user", errBadStoreFlag)
	}
	if useTLS {
		cfg, err := f.tlsConfig()
		if err != nil {
			return etcd.Options{}, err
		}
		opts.TLS = cfg
	}
	return opts, nil
}

func (f *storeFlags) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.cacert != "" {
		pem, err := os.ReadFile(f.cacert)
		if err != nil {
			return nil, fmt.Errorf("--etcd-cacert: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--etcd-cacert: %w: %s holds no PEM certificate", errBadStoreFlag, f.cacert)
		}
		cfg.RootCAs = pool
	}
	if (f.cert == "") != (f.key == "") {
		return nil, fmt.Errorf("--etcd-cert/--etcd-key: %w: give both or neither", errBadStoreFlag)
	}
	if f.cert != "" {
		pair, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return nil, fmt.Errorf("--etcd-cert/--etcd-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// openedStore is a store and, for etcd, the client shared with leader
// election.
type openedStore struct {
	store.Store
	// Etcd is the etcd client, nil for the memory store.
	Etcd   *clientv3.Client
	Prefix string
	close  func() error
}

// Close releases the connection.
func (o *openedStore) Close() error {
	if o.close == nil {
		return nil
	}
	return o.close()
}

// open connects to the store the flags name.
func (f *storeFlags) open(ctx context.Context, log *slog.Logger) (*openedStore, error) {
	if f.isMemory() {
		return &openedStore{Store: store.NewMemory()}, nil
	}
	opts, err := f.etcdOptions()
	if err != nil {
		return nil, err
	}
	opts.Logger = log
	st, err := etcd.New(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("--store %s: %w", f.store, err)
	}
	prefix := opts.Prefix
	if prefix == "" {
		prefix = etcd.DefaultPrefix
	}
	return &openedStore{Store: st, Etcd: st.Client(), Prefix: strings.TrimRight(prefix, "/"), close: st.Close}, nil
}

// openShared is open for commands that only make sense against a control
// plane in another process (apply, get, delete).
func (f *storeFlags) openShared(ctx context.Context, log *slog.Logger) (*openedStore, error) {
	if f.isMemory() {
		return nil, fmt.Errorf("--store: %w: the memory store lives inside one process; point this command at the control plane's etcd with --store etcd://HOST:PORT", errBadStoreFlag)
	}
	return f.open(ctx, log)
}
