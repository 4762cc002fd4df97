package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube"
)

// connFlags are how a verb reaches the control plane, always through its
// API: the API a kubeconfig names (--kubeconfig, $KUBECONFIG or
// ~/.kube/config), or, with --store etcd://... (which wins over a
// kubeconfig) or without any kubeconfig, the API started in this process
// over that store (kube.StartEmbedded), so the verb sees the same
// admission, errors and printer columns either way.
type connFlags struct {
	kf kubeFlags
	sf storeFlags
}

func (f *connFlags) register(cmd *cobra.Command) {
	f.sf.register(cmd)
	f.kf.register(cmd)
}

// embedded reports whether connect starts the API in this process.
func (f *connFlags) embedded(cmd *cobra.Command) bool {
	if fl := cmd.Flags().Lookup("store"); fl != nil && fl.Changed {
		return true
	}
	return !f.kf.found()
}

// connect returns a client of the control plane's API and what ends the
// connection (for an API started in this process, the server and its
// store). -n, when given, is the client's namespace.
func (f *connFlags) connect(cmd *cobra.Command) (*apiClient, func(), error) {
	if !f.embedded(cmd) {
		c, err := f.kf.connect(cmd)
		return c, func() {}, err
	}
	st, err := f.sf.openShared(cmd.Context(), nil)
	if err != nil {
		return nil, nil, err
	}
	// The API server library logs its start at info level through klog;
	// a one-shot command prints only its own output.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	ns := ""
	if fl := cmd.Flags().Lookup("namespace"); fl != nil && fl.Changed {
		ns = fl.Value.String()
	}
	e, err := kube.StartEmbedded(cmd.Context(), kube.EmbeddedOptions{Store: st.Store, Namespace: ns})
	if err != nil {
		_ = st.Close()
		return nil, nil, fmt.Errorf("--store %s: %w", f.sf.store, err)
	}
	return e.Client, func() {
		if err := e.Close(); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v\n", err)
		}
		_ = st.Close()
	}, nil
}
