package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/virtkit/virtkit/cluster"
	applycmd "github.com/virtkit/virtkit/cmd/virtkit/internal/apply"
	deletecmd "github.com/virtkit/virtkit/cmd/virtkit/internal/delete"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/get"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube/kubetest"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/manifest"
	"github.com/virtkit/virtkit/store"
)

// serveAt serves the API over st for one test, its tables' ages counted
// at now (the zero time: the real clock); `virtkit --store` runs this.
func serveAt(t *testing.T, st store.Store, now time.Time) *kube.Client {
	t.Helper()
	opts := cluster.InProcessAPIOptions{Store: st}
	if !now.IsZero() {
		opts.Clock = testingclock.NewFakePassiveClock(now)
	}
	return kubetest.ServeWith(t, opts)
}

// runGet prints as `virtkit get KIND [NAME]` does.
func runGet(t *testing.T, api *kube.Client, w io.Writer, kind, name string, ns namespaceFlags, output string) error {
	t.Helper()
	o := &get.Options{Out: w, API: api, Namespace: ns.namespace, AllNamespaces: ns.allNamespaces, Output: output}
	args := []string{kind}
	if name != "" {
		args = append(args, name)
	}
	if err := o.Complete(args); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	return o.Run(t.Context())
}

// applyString applies manifests as `virtkit apply -f -` does; failures
// are reported on errOut.
func applyString(t *testing.T, api *kube.Client, text string) (out, errOut string, err error) {
	t.Helper()
	objs, err := manifest.Read(strings.NewReader(text), []string{"-"})
	require.NoError(t, err)
	var o, e bytes.Buffer
	opts := &applycmd.Options{Out: &o, ErrOut: &e, Files: []string{"-"}, API: api, Namespace: "default", Objects: objs, Report: reportErr}
	require.NoError(t, opts.Complete(nil))
	require.NoError(t, opts.Validate())
	err = opts.Run(t.Context())
	return o.String(), e.String(), err
}

// runDelete deletes as `virtkit delete KIND NAME... --cascade` does.
func runDelete(t *testing.T, api *kube.Client, w, errOut io.Writer, kind, namespace string, names []string, cascade string) error {
	t.Helper()
	o := &deletecmd.Options{Out: w, ErrOut: errOut, API: api, Namespace: namespace, Cascade: cascade, Report: reportErr}
	if err := o.Complete(append([]string{kind}, names...)); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	return o.Run(t.Context())
}
