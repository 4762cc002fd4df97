package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube"
)

// errNoKubeconfig: a command that only speaks the API found no kubeconfig.
var errNoKubeconfig = errors.New("no kubeconfig: give --kubeconfig, set $KUBECONFIG or write ~/.kube/config (virtkit controller --write-kubeconfig)")

// kubeFlags are the kubeconfig flags of the commands that talk to the
// control plane's API.
type kubeFlags struct {
	kubeconfig string
	context    string
}

func (k *kubeFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig of the control plane's API (default $KUBECONFIG, then ~/.kube/config)")
	cmd.Flags().StringVar(&k.context, "context", "", "kubeconfig context to use (default its current-context)")
}

// loader returns client-go's loading rules and overrides for the flags.
func (k *kubeFlags) loader() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if k.kubeconfig != "" {
		rules.ExplicitPath = k.kubeconfig
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.context})
}

// found reports whether a kubeconfig was given or exists where client-go
// looks for one.
func (k *kubeFlags) found() bool {
	if k.kubeconfig != "" {
		return true
	}
	for _, p := range clientcmd.NewDefaultClientConfigLoadingRules().Precedence {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// useAPI decides whether a command talks to the API or to the store: an
// explicit --store wins (embedders, back-compat), else a kubeconfig that is
// given or found, else the store flags as before.
func useAPI(cmd *cobra.Command, k *kubeFlags) bool {
	if f := cmd.Flags().Lookup("store"); f != nil && f.Changed {
		return false
	}
	return k.found()
}

// apiClient is a connection to the control plane's API.
type apiClient struct {
	config    *rest.Config
	dynamic   dynamic.Interface
	mapper    meta.RESTMapper
	discovery discovery.CachedDiscoveryInterface
	rest      rest.Interface
	namespace string // the context's namespace, "default" when unset
}

// connect builds a client from the kubeconfig; namespace, when changed on
// the command line, overrides the context's.
func (k *kubeFlags) connect(cmd *cobra.Command) (*apiClient, error) {
	cc := k.loader()
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, errNoKubeconfig
		}
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.UserAgent = "virtkit"
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	if f := cmd.Flags().Lookup("namespace"); f != nil && f.Changed {
		ns = f.Value.String()
	}
	return newAPIClient(cfg, ns)
}

// newAPIClient builds the clients of the API cfg reaches, in namespace ns
// by default (kube.NewClient).
func newAPIClient(cfg *rest.Config, ns string) (*apiClient, error) {
	c, err := kube.NewClient(cfg, ns)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return &apiClient{config: cfg, dynamic: c.Dynamic, mapper: c.Mapper, discovery: c.Discovery, rest: c.REST, namespace: ns}, nil
}

// kube is the connection as package kube's verbs take it.
func (c *apiClient) kube() *kube.Client {
	return &kube.Client{Dynamic: c.dynamic, Mapper: c.mapper, Discovery: c.discovery, REST: c.rest, Namespace: c.namespace}
}

// mapping resolves what the user typed (kube.Client.Mapping).
func (c *apiClient) mapping(typed string) (*meta.RESTMapping, error) { return c.kube().Mapping(typed) }

// resourceFor is the dynamic client of a mapping (kube.Client.ResourceFor).
func (c *apiClient) resourceFor(m *meta.RESTMapping, namespace string) dynamic.ResourceInterface {
	return c.kube().ResourceFor(m, namespace)
}

// errReported: the command has printed its errors kubectl-style already.
var errReported = exitError{code: 1}

// reportErr prints err as kubectl does: "Error from server (NotFound): …"
// for the server's statuses, "The Kind "name" is invalid:" and one line per
// cause for Invalid, "error: You must be logged in to the server" for
// Unauthorized, "error: …" otherwise.
func reportErr(w io.Writer, err error) {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		status := st.Status()
		switch {
		case status.Reason == metav1.StatusReasonUnauthorized:
			fmt.Fprintf(w, "error: You must be logged in to the server (%s)\n", escLines(status.Message))
			return
		case status.Reason == metav1.StatusReasonInvalid && status.Details != nil:
			// kubectl: one cause on the same line, several as a list.
			fmt.Fprintf(w, "The %s %q is invalid", esc(status.Details.Kind), esc(status.Details.Name))
			causes := status.Details.Causes
			if len(causes) == 0 {
				fmt.Fprintln(w)
				return
			}
			line := func(c metav1.StatusCause) string {
				if c.Field != "" {
					return esc(c.Field) + ": " + esc(c.Message)
				}
				return esc(c.Message)
			}
			if len(causes) == 1 {
				fmt.Fprintf(w, ": %s\n", line(causes[0]))
				return
			}
			fmt.Fprintln(w, ": ")
			for _, c := range causes {
				fmt.Fprintf(w, "* %s\n", line(c))
			}
			return
		}
		reason := string(st.Status().Reason)
		if reason == "" {
			reason = "Unknown"
		}
		fmt.Fprintf(w, "Error from server (%s): %s\n", reason, escLines(st.Status().Message))
		return
	}
	fmt.Fprintf(w, "error: %s\n", escLines(err.Error()))
}

// apiFail reports err kubectl-style and ends the command with status 1.
func apiFail(cmd *cobra.Command, err error) error {
	if err == nil {
		return nil
	}
	var ex exitError
	if errors.As(err, &ex) {
		return err
	}
	reportErr(cmd.ErrOrStderr(), err)
	return errReported
}
