package upload_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cdi/importer"
	"github.com/virtkit/virtkit/cdi/upload"
)

// receiver records what reaches the volumes.
type receiver struct {
	mu       sync.Mutex
	got      map[string]string
	finished map[string]bool
	err      error // returned by ReceiveUpload
}

func (r *receiver) ReceiveUpload(_ context.Context, ns, name string, body io.Reader) (func(context.Context) error, error) {
	if r.err != nil {
		return nil, r.err
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.got[ns+"/"+name] = string(b)
	r.mu.Unlock()
	return func(context.Context) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.finished[ns+"/"+name] = true
		return nil
	}, nil
}

func TestProxy(t *testing.T) {
	tokens := &upload.Tokens{Key: testKey(0)}
	rec := &receiver{got: map[string]string{}, finished: map[string]bool{}}
	p, err := upload.NewProxy(upload.ProxyOptions{Tokens: tokens, Receiver: rec})
	require.NoError(t, err)
	srv := httptest.NewTLSServer(p)
	defer srv.Close()
	defer p.Close()
	tok, err := tokens.Issue("ns", "disk")
	require.NoError(t, err)
	do := func(method, path, token, contentType string, body io.Reader) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, body)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	code, _ := do(http.MethodGet, upload.PathHealthz, "", "", nil)
	assert.Equal(t, http.StatusOK, code)
	code, _ = do(http.MethodHead, upload.PathUploadAsync, tok, "", nil)
	assert.Equal(t, http.StatusOK, code, "virtctl finds the async endpoint")
	code, body := do(http.MethodPost, upload.PathUpload, "", "", strings.NewReader("x"))
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Contains(t, body, "token is required")
	code, _ = do(http.MethodPost, upload.PathUpload, "not.valid", "", strings.NewReader("x"))
	assert.Equal(t, http.StatusUnauthorized, code)
	code, _ = do(http.MethodPost, "/v1beta1/elsewhere", tok, "", strings.NewReader("x"))
	assert.Equal(t, http.StatusNotFound, code)
	code, _ = do(http.MethodGet, upload.PathUpload, tok, "", nil)
	assert.Equal(t, http.StatusMethodNotAllowed, code)

	code, _ = do(http.MethodPost, upload.PathUpload, tok, "application/octet-stream", strings.NewReader("sync data"))
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "sync data", rec.got["ns/disk"])
	assert.True(t, rec.finished["ns/disk"], "a sync upload is answered once processed")

	tok2, err := tokens.Issue("ns", "async")
	require.NoError(t, err)
	code, _ = do(http.MethodPost, upload.PathUploadAsync, tok2, "application/octet-stream", strings.NewReader("async data"))
	require.Equal(t, http.StatusOK, code)
	p.Wait()
	assert.Equal(t, "async data", rec.got["ns/async"])
	assert.True(t, rec.finished["ns/async"])

	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	require.NoError(t, mw.WriteField("other", "ignored"))
	fw, err := mw.CreateFormFile(upload.FormFileField, "disk.img")
	require.NoError(t, err)
	_, _ = fw.Write([]byte("form data"))
	require.NoError(t, mw.Close())
	tok3, err := tokens.Issue("ns", "form")
	require.NoError(t, err)
	code, _ = do(http.MethodPost, upload.PathUploadForm, tok3, mw.FormDataContentType(), &form)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "form data", rec.got["ns/form"])
	code, _ = do(http.MethodPost, upload.PathUploadForm, tok3, "application/octet-stream", strings.NewReader("x"))
	assert.Equal(t, http.StatusBadRequest, code)
}

// The receiver's errors reach the uploader with the status virtctl
// expects to retry on or give up on, and without a node path.
func TestProxyErrors(t *testing.T) {
	tokens := &upload.Tokens{Key: testKey(0)}
	tok, err := tokens.Issue("ns", "disk")
	require.NoError(t, err)
	tests := []struct {
		name string
		err  error
		code int
	}{
		{"not ready", fmt.Errorf("%w: datavolume ns/disk is in phase Pending", importer.ErrNotUploadReady), http.StatusServiceUnavailable},
		{"busy", importer.ErrUploadInProgress, http.StatusConflict},
		{"too large", fmt.Errorf("%w: /var/lib/x is big", importer.ErrTooLarge), http.StatusBadRequest},
		{"node failure", errors.New("open /var/lib/virtkit/scratch: no space left"), http.StatusInternalServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := upload.NewProxy(upload.ProxyOptions{Tokens: tokens, Receiver: &receiver{err: tt.err}})
			require.NoError(t, err)
			defer p.Close()
			req := httptest.NewRequest(http.MethodPost, upload.PathUpload, strings.NewReader("x"))
			req.Header.Set("Authorization", "Bearer "+tok)
			rw := httptest.NewRecorder()
			p.ServeHTTP(rw, req)
			assert.Equal(t, tt.code, rw.Code)
			assert.NotContains(t, rw.Body.String(), "/var/lib")
		})
	}
	_, err = upload.NewProxy(upload.ProxyOptions{Tokens: tokens})
	require.ErrorIs(t, err, upload.ErrInvalidProxyOptions)
}
