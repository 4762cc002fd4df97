package apiserver_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/virtkit/virtkit/apiserver"
)

// blockingGuest answers the guest-agent subresources once released (or
// when the request ends), telling entered when one starts.
type blockingGuest struct {
	entered chan struct{}
	release chan struct{}
}

func (g blockingGuest) answer(ctx context.Context) (any, error) {
	g.entered <- struct{}{}
	select {
	case <-g.release:
		return map[string]string{"hostname": "guest"}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (g blockingGuest) GuestOSInfo(ctx context.Context, _, _ string) (any, error) {
	return g.answer(ctx)
}
func (g blockingGuest) UserList(ctx context.Context, _, _ string) (any, error) { return g.answer(ctx) }
func (g blockingGuest) FilesystemList(ctx context.Context, _, _ string) (any, error) {
	return g.answer(ctx)
}

const guestOSInfoPath = "/apis/subresources.kubevirt.io/v1/namespaces/team-a/virtualmachineinstances/vmi/guestosinfo"

// aliceClient is a plain HTTP client with alice's token (the library
// exempts AdminGroup from its in-flight bound).
func aliceClient(t *testing.T, ts *testServer) *http.Client {
	t.Helper()
	tr, err := rest.TransportFor(ts.token("alice-token"))
	require.NoError(t, err)
	return &http.Client{Transport: tr}
}

// The library bounds the requests in flight (429 past the bound) and the
// time of a request that is not long-running (504 past it).
func TestGenericLimits(t *testing.T) {
	t.Run("max requests in flight", func(t *testing.T) {
		g := blockingGuest{entered: make(chan struct{}, 1), release: make(chan struct{})}
		ts := startGeneric(t, apiserver.GenericOptions{GuestInfo: g, MaxRequestsInFlight: 1})
		c := aliceClient(t, ts)
		done := make(chan int, 1)
		go func() {
			resp, err := c.Get(ts.URL + guestOSInfoPath)
			if err != nil {
				done <- 0
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			done <- resp.StatusCode
		}()
		select {
		case <-g.entered:
		case <-time.After(30 * time.Second):
			t.Fatal("the guest-agent request did not arrive")
		}
		resp, err := c.Get(ts.URL + "/apis/kubevirt.io/v1/namespaces/team-a/virtualmachines")
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		close(g.release)
		assert.Equal(t, http.StatusOK, <-done)
	})
	t.Run("request timeout", func(t *testing.T) {
		g := blockingGuest{entered: make(chan struct{}, 1), release: make(chan struct{})}
		ts := startGeneric(t, apiserver.GenericOptions{GuestInfo: g, RequestTimeout: time.Second})
		resp, err := aliceClient(t, ts).Get(ts.URL + guestOSInfoPath)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusGatewayTimeout, resp.StatusCode)
	})
}
