package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd"
)

// errBadStoreFlag wraps every malformed --store* flag.
var errBadStoreFlag = errors.New("invalid store flag")

// etcdPasswordEnv names the environment variable that holds the etcd
// password when neither --etcd-password-file nor --etcd-password is given.
const etcdPasswordEnv = "VIRTKIT_ETCD_PASSWORD"

// maxPasswordFile bounds what --etcd-password-file reads.
const maxPasswordFile = 4096

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
	// passwordFile holds the password (--etcd-password-file).
	passwordFile string
	// stderr receives warnings; nil discards them.
	stderr func() io.Writer
	// memoryStartRV is the first resourceVersion of a memory store less
	// one: a store a Kubernetes generic API server serves starts at 1.
	memoryStartRV uint64
}

func (f *storeFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.store, "store", "memory",
		"object store: memory (this process only) or etcd://HOST:PORT[,HOST:PORT...] (etcds:// for TLS)")
	fs.StringVar(&f.prefix, "etcd-prefix", etcd.DefaultPrefix, "etcd key prefix of virtkit's objects (and of the leader election key)")
	fs.StringVar(&f.cacert, "etcd-cacert", "", "PEM file of the CA that signed etcd's server certificate (enables TLS)")
	fs.StringVar(&f.cert, "etcd-cert", "", "PEM client certificate for etcd (with --etcd-key)")
	fs.StringVar(&f.key, "etcd-key", "", "PEM client key for etcd (with --etcd-cert)")
	fs.StringVar(&f.user, "etcd-user", "", "etcd user name (etcd auth; the password comes from --etcd-password-file or $"+etcdPasswordEnv+")")
	fs.StringVar(&f.passwordFile, "etcd-password-file", "", "file holding the etcd password (one line; a trailing newline is dropped); overrides $"+etcdPasswordEnv)
	fs.StringVar(&f.password, "etcd-password", "", "etcd password (visible to every user in the process list)")
	// Kept so existing scripts work, hidden from help and warned about on
	// use: a password in argv is readable by every local user.
	_ = fs.MarkDeprecated("etcd-password", "it shows the password to every local user (ps, /proc); use --etcd-password-file or $"+etcdPasswordEnv)
	f.stderr = cmd.ErrOrStderr
}

func (f *storeFlags) warn(format string, args ...any) {
	if f.stderr != nil {
		fmt.Fprintf(f.stderr(), "warning: "+format+"\n", args...)
	}
}

// etcdPassword returns the password from, in order: --etcd-password-file,
// --etcd-password, $VIRTKIT_ETCD_PASSWORD (read only with --etcd-user, so
// an exported variable does not break commands against an etcd without
// auth). Giving both flags is an error.
func (f *storeFlags) etcdPassword() (string, error) {
	switch {
	case f.passwordFile != "" && f.password != "":
		return "", fmt.Errorf("--etcd-password-file/--etcd-password: %w: give one", errBadStoreFlag)
	case f.passwordFile != "":
		return readPasswordFile(f.passwordFile, f.warn)
	case f.password != "":
		return f.password, nil
	}
	if f.user == "" {
		return "", nil // the variable goes with --etcd-user only
	}
	return os.Getenv(etcdPasswordEnv), nil
}

// readPasswordFile reads a password file as ssh and etcdctl users expect:
// one line, its trailing newline dropped, refused when empty or larger than
// maxPasswordFile, with a warning when others may read it.
func readPasswordFile(path string, warn func(string, ...any)) (string, error) {
	file, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("--etcd-password-file: %w", err)
	}
	defer file.Close()
	if st, err := file.Stat(); err == nil && st.Mode().Perm()&0o077 != 0 {
		warn("--etcd-password-file %s is accessible by group or others (mode %v); chmod 600 it", path, st.Mode().Perm())
	}
	data, err := io.ReadAll(io.LimitReader(file, maxPasswordFile+1))
	if err != nil {
		return "", fmt.Errorf("--etcd-password-file: %w", err)
	}
	if len(data) > maxPasswordFile {
		return "", fmt.Errorf("--etcd-password-file: %w: %s is larger than %d bytes", errBadStoreFlag, path, maxPasswordFile)
	}
	pw := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
	switch {
	case pw == "":
		return "", fmt.Errorf("--etcd-password-file: %w: %s is empty", errBadStoreFlag, path)
	case strings.ContainsAny(pw, "\r\n"):
		return "", fmt.Errorf("--etcd-password-file: %w: %s holds more than one line", errBadStoreFlag, path)
	}
	return pw, nil
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
	password, err := f.etcdPassword()
	if err != nil {
		return etcd.Options{}, err
	}
	opts := etcd.Options{Endpoints: endpoints, Prefix: f.prefix, Username: f.user, Password: password}
	if password != "" && f.user == "" {
		return etcd.Options{}, fmt.Errorf("--etcd-password(-file)/$%s: %w: needs --etcd-user", etcdPasswordEnv, errBadStoreFlag)
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

var _ store.StatusWriter = (*openedStore)(nil)

// UpdateWithStatus passes the opened store's single write of metadata and
// status on (store.StatusWriter): embedding the Store interface alone would
// hide it, and callers would fall back to two writes.
func (o *openedStore) UpdateWithStatus(ctx context.Context, obj virtkit.Object) error {
	return store.UpdateWithStatus(ctx, o.Store, obj)
}

// CorruptObjects lists the corrupt values the etcd store has met (none for
// the memory store), so metrics export them for this process's store.
func (o *openedStore) CorruptObjects() []store.CorruptError {
	if r, ok := o.Store.(store.CorruptReporter); ok {
		return r.CorruptObjects()
	}
	return nil
}

// Close releases the connection.
func (o *openedStore) Close() error {
	if o.close == nil {
		return nil
	}
	return o.close()
}

// open connects to the store the flags name. log receives the store's
// warnings (corrupt values skipped); nil sends them to the command's stderr.
func (f *storeFlags) open(ctx context.Context, log *slog.Logger) (*openedStore, error) {
	if f.isMemory() {
		m, err := store.NewMemoryWithOptions(store.Options{StartResourceVersion: f.memoryStartRV})
		if err != nil {
			return nil, err
		}
		return &openedStore{Store: m}, nil
	}
	opts, err := f.etcdOptions()
	if err != nil {
		return nil, err
	}
	if log == nil && f.stderr != nil {
		// One-shot commands (get, apply) log nothing else, but a corrupt
		// value they skip must not go unmentioned.
		log = slog.New(slog.NewTextHandler(f.stderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
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
		return nil, fmt.Errorf("--store: %w: the memory store lives inside one process; point this command at the control plane's API with a kubeconfig (--kubeconfig, $KUBECONFIG or ~/.kube/config, as virtkit controller --write-kubeconfig writes it) or at its etcd with --store etcd://HOST:PORT", errBadStoreFlag)
	}
	return f.open(ctx, log)
}
