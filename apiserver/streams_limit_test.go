package apiserver_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit/apiserver"
)

// Streams over the per-user or total bound are refused with 429 and a
// TooManyRequests Status naming the bound; a closed stream frees its slot.
func TestStreamLimits(t *testing.T) {
	e := startStreamEnvWith(t, apiserver.Options{
		MaxStreams: 3, MaxStreamsPerUser: 2,
		Authorizer: &apiserver.Policy{Rules: []apiserver.PolicyRule{{User: "alice", Namespaces: []string{"default"}}}},
	})
	pool := x509.NewCertPool()
	pool.AddCert(e.certs.CA)
	alice := func() (*websocket.Conn, *http.Response, error) {
		return e.dial(t, &tls.Config{RootCAs: pool}, http.Header{"Authorization": {"Bearer alice-token"}}, "default", "console")
	}
	admin := func() (*websocket.Conn, *http.Response, error) {
		return e.dial(t, e.adminTLS(t), nil, "default", "console")
	}
	refused := func(t *testing.T, resp *http.Response, err error, want string) {
		t.Helper()
		require.Error(t, err)
		require.NotNil(t, resp)
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		var st metav1.Status
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
		assert.Equal(t, metav1.StatusReasonTooManyRequests, st.Reason)
		assert.Contains(t, st.Message, want)
	}
	var open []*websocket.Conn
	defer func() {
		for _, c := range open {
			_ = c.Close()
		}
	}()
	for range 2 {
		c, _, err := admin()
		require.NoError(t, err)
		open = append(open, c)
	}
	_, resp, err := admin()
	refused(t, resp, err, "limit per user")
	c, _, err := alice()
	require.NoError(t, err, "alice has her own per-user budget")
	open = append(open, c)
	_, resp, err = alice()
	refused(t, resp, err, "streams open, its limit")

	// Closing one of the admin's streams frees a slot.
	require.NoError(t, open[0].WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second)))
	_ = open[0].Close()
	require.Eventually(t, func() bool {
		c, _, err := admin()
		if err != nil {
			return false
		}
		open = append(open, c)
		return true
	}, 30*time.Second, 50*time.Millisecond, "slot freed")
}
