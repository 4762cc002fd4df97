package apiserver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
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
	t.Run("json patch copies", func(t *testing.T) {
		ts := startGeneric(t, apiserver.GenericOptions{})
		dyn, err := dynamic.NewForConfig(ts.admin())
		require.NoError(t, err)
		vms := dyn.Resource(vmGVR).Namespace("default")
		_, err = vms.Create(t.Context(), unstructuredOf(t, vmManifest("default", "big", "Halted")), metav1.CreateOptions{})
		require.NoError(t, err)
		// Sixty copies of a 64 KiB annotation, each removed again: past
		// the library's bound on the bytes a patch copies (3 MiB), the
		// patch is refused although its result is small.
		patch := func(copies int) error {
			ops := []string{`{"op":"add","path":"/metadata/annotations","value":{"a":"` + strings.Repeat("x", 64<<10) + `"}}`}
			for i := range copies {
				// Copied and removed: the result stays small, the bytes
				// copied add up.
				ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/metadata/annotations/a","path":"/metadata/annotations/b%d"}`, i),
					fmt.Sprintf(`{"op":"remove","path":"/metadata/annotations/b%d"}`, i))
			}
			_, err := vms.Patch(t.Context(), "big", types.JSONPatchType, []byte("["+strings.Join(ops, ",")+"]"), metav1.PatchOptions{})
			return err
		}
		require.NoError(t, patch(2), "a few copies are fine")
		err = patch(60)
		require.Error(t, err)
		assert.True(t, apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsInvalid(err), "%v", err)
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
