package node_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

func TestStoreConfig(t *testing.T) {
	ctx := context.Background()
	s := store.NewMemory()
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: "ns", Name: name} }
	require.NoError(t, s.Create(ctx, &corev1.ConfigMap{ObjectMeta: meta("cm"),
		Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": {0, 1}}}))
	require.NoError(t, s.Create(ctx, &corev1.Secret{ObjectMeta: meta("sec"),
		Data: map[string][]byte{"pw": []byte("x"), "user": []byte("old")}, StringData: map[string]string{"user": "new"}}))
	require.NoError(t, s.Create(ctx, &corev1.Secret{ObjectMeta: meta("sa-token"), Type: corev1.SecretTypeServiceAccountToken,
		Data: map[string][]byte{"token": []byte("tok"), "ca.crt": []byte("ca"), "other": []byte("no")}}))
	require.NoError(t, s.Create(ctx, &corev1.Secret{ObjectMeta: meta("opaque")}))
	require.NoError(t, s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta("builder"),
		Secrets: []corev1.ObjectReference{{Name: "gone"}, {Name: "opaque"}, {Name: "sa-token"}}}))
	require.NoError(t, s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta("bare")}))

	r := node.StoreConfig{Store: s}
	asMap := func(fs []domain.ConfigFile) map[string]string {
		out := map[string]string{}
		for _, f := range fs {
			out[f.Path] = string(f.Data)
		}
		return out
	}
	tests := []struct {
		name string
		req  domain.ConfigRequest
		want map[string]string
		is   error
	}{
		{"configMap", domain.ConfigRequest{Namespace: "ns", Kind: domain.VolumeConfigMap, Name: "cm"}, map[string]string{"a": "1", "b": "\x00\x01"}, nil},
		{"secret, stringData wins", domain.ConfigRequest{Namespace: "ns", Kind: domain.VolumeSecret, Name: "sec"}, map[string]string{"pw": "x", "user": "new"}, nil},
		{"serviceAccount with token", domain.ConfigRequest{Namespace: "ns", Kind: domain.VolumeServiceAccount, Name: "builder"},
			map[string]string{"namespace": "ns", "token": "tok", "ca.crt": "ca"}, nil},
		{"serviceAccount without token", domain.ConfigRequest{Namespace: "ns", Kind: domain.VolumeServiceAccount, Name: "bare"}, map[string]string{"namespace": "ns"}, nil},
		{"missing configMap", domain.ConfigRequest{Namespace: "ns", Kind: domain.VolumeConfigMap, Name: "nope"}, nil, domain.ErrConfigSourceMissing},
		{"other namespace", domain.ConfigRequest{Namespace: "other", Kind: domain.VolumeSecret, Name: "sec"}, nil, domain.ErrConfigSourceMissing},
		{"missing optional", domain.ConfigRequest{Namespace: "ns", Kind: domain.VolumeSecret, Name: "nope", Optional: true}, map[string]string{}, nil},
		{"missing serviceAccount", domain.ConfigRequest{Namespace: "ns", Kind: domain.VolumeServiceAccount, Name: "nope"}, nil, domain.ErrConfigSourceMissing},
		{"other kind", domain.ConfigRequest{Namespace: "ns", Kind: domain.VolumeDownwardAPI, Name: "x"}, nil, domain.ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.ResolveConfig(ctx, tc.req)
			if tc.is != nil {
				require.ErrorIs(t, err, tc.is)
				assert.NotContains(t, err.Error(), "tok")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, asMap(got))
		})
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err := r.ResolveConfig(cancelled, domain.ConfigRequest{Namespace: "ns", Kind: domain.VolumeConfigMap, Name: "cm"})
	assert.ErrorIs(t, err, context.Canceled)
}
