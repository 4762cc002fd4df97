package cluster_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

// notABackend is a store the API server cannot serve from.
type notABackend struct{ store.Store }

func TestStartAPIServerRefusesOptions(t *testing.T) {
	mem := store.NewMemory()
	tests := []struct {
		name string
		opts cluster.APIServerOptions
		want string
	}{
		{"no store", cluster.APIServerOptions{Addr: "127.0.0.1:0"}, "APIServerOptions.Store: required"},
		{"no address", cluster.APIServerOptions{Store: mem}, "APIServerOptions.Addr: required"},
		{"negative streams", cluster.APIServerOptions{Store: mem, Addr: "127.0.0.1:0", MaxStreams: -1},
			"APIServerOptions.MaxStreams: -1: must not be negative"},
		{"negative streams per user", cluster.APIServerOptions{Store: mem, Addr: "127.0.0.1:0", MaxStreamsPerUser: -2},
			"APIServerOptions.MaxStreamsPerUser: -2: must not be negative"},
		{"negative watches per user", cluster.APIServerOptions{Store: mem, Addr: "127.0.0.1:0", MaxWatchesPerUser: -1},
			"APIServerOptions.MaxWatchesPerUser: -1: must not be negative"},
		{"store without the API's storage", cluster.APIServerOptions{Store: notABackend{mem}, Addr: "127.0.0.1:0"},
			"cannot back the API server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := cluster.StartAPIServer(t.Context(), tt.opts)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.True(t, errors.Is(err, virtkit.ErrInvalidOptions), "%v", err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// The API serves the cluster's store to a client of the admin kubeconfig
// it wrote, with its node agents' endpoints and the upload proxy beside it.
func TestStartAPIServerServesTheClusterStore(t *testing.T) {
	c, err := cluster.New(cluster.Options{Nodes: 1})
	require.NoError(t, err)
	require.NoError(t, c.Store().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}))
	dir := t.TempDir()
	kc := filepath.Join(dir, "admin.kubeconfig")
	s, err := cluster.StartAPIServer(t.Context(), cluster.APIServerOptions{
		Store: c.Store(), Addr: "0.0.0.0:0", CertDir: filepath.Join(dir, "pki"), Kubeconfig: kc,
		GuestInfo: c.GuestInfo(), LocalNodes: c.Nodes(), UploadProxyAddr: "127.0.0.1:0", Uploads: c,
	})
	require.NoError(t, err)
	assert.Regexp(t, `^https://127\.0\.0\.1:\d+$`, s.URL, "a wildcard address is served to clients on loopback")
	assert.Regexp(t, `^https://127\.0\.0\.1:\d+$`, s.UploadProxyURL)
	assert.Equal(t, filepath.Join(dir, "pki"), s.CertDir)

	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	require.NoError(t, err)
	assert.Equal(t, s.URL, cfg.Host)
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	got, err := client.CoreV1().Namespaces().Get(t.Context(), "team-a", metav1.GetOptions{})
	require.NoError(t, err, "the namespace written to the cluster's store, read through the API")
	assert.Equal(t, "team-a", got.Name)
	assert.NoError(t, s.Stop())
}
