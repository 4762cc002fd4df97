package main

import (
	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit/cluster"
)

// clientFlags are how a command reaches the control plane's API: through
// a kubeconfig, or with --store by serving the API in this process over
// that store. Either way the command talks to the same server code.
type clientFlags struct {
	sf storeFlags
	kf kubeFlags
}

func (f *clientFlags) register(cmd *cobra.Command) {
	f.sf.register(cmd)
	f.kf.register(cmd)
}

// connect returns a client of the control plane's API and how to release
// it. An explicit --store wins over a kubeconfig: the API is served inside
// this process over that store (cluster.StartInProcessAPI, as the admin,
// with no port), for embedders and scripts that reach etcd and not the
// API. Without either, the memory store's error says where to point the
// command.
func (f *clientFlags) connect(cmd *cobra.Command) (*apiClient, func(), error) {
	if useAPI(cmd, &f.kf) {
		c, err := f.kf.connect(cmd)
		return c, func() {}, err
	}
	st, err := f.sf.openShared(cmd.Context(), nil)
	if err != nil {
		return nil, nil, err
	}
	api, err := cluster.StartInProcessAPI(cmd.Context(), cluster.InProcessAPIOptions{Store: st.Store})
	if err != nil {
		_ = st.Close()
		return nil, nil, err
	}
	release := func() {
		api.Stop()
		_ = st.Close()
	}
	ns := "default"
	if fl := cmd.Flags().Lookup("namespace"); fl != nil {
		ns = fl.Value.String()
	}
	c, err := newAPIClient(api.Config, ns)
	if err != nil {
		release()
		return nil, nil, err
	}
	return c, release, nil
}
