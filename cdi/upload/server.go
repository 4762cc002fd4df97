package upload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// The upload server is the part of the upload path that runs where the
// volume lives (CDI's upload server pod; virtkit's node agent endpoint):
// when the proxy's process does not run the DataVolume's node, it forwards
// the request's body to the server of that node, which writes it into the
// volume as the proxy would have.

// ErrElsewhere: the DataVolume's volume is on a node this process does not
// run; a Receiver returns it (wrapped) before reading the body, so that
// the proxy forwards the upload instead.
var ErrElsewhere = errors.New("the volume is on a node another process runs")

// ServerPathPrefix starts the upload server's paths:
// /v1/namespaces/NS/datavolumes/NAME/upload.
const ServerPathPrefix = "/v1/namespaces/"

// AsyncParam is the query parameter of a forwarded upload that asks for
// the answer once the data is received (the conversion going on).
const AsyncParam = "async"

// ServerPath is the path of an upload to DataVolume namespace/name on an
// upload server.
func ServerPath(namespace, name string) string {
	return ServerPathPrefix + url.PathEscape(namespace) + "/datavolumes/" + url.PathEscape(name) + "/upload"
}

// ParseServerPath returns the DataVolume an upload server path names; ok
// is false when p is not one.
func ParseServerPath(p string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(p, ServerPathPrefix)
	if !ok {
		return "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 4 || parts[1] != "datavolumes" || parts[3] != "upload" || parts[0] == "" || parts[2] == "" {
		return "", "", false
	}
	return parts[0], parts[2], true
}

// ServeUpload is the upload server's handler of one forwarded upload to
// DataVolume namespace/name: it writes the request's body through recv,
// then converts it and answers; with the AsyncParam query parameter
// "true" it answers once the data is received and hands the conversion to
// background, which runs it after the answer (nil runs it before). Errors
// are answered as the proxy answers them (status and tenant message).
// The caller has authenticated the request (it comes from the proxy).
func ServeUpload(w http.ResponseWriter, r *http.Request, recv Receiver, namespace, name string, background func(func(context.Context))) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if recv == nil {
		http.Error(w, fmt.Sprintf("datavolume %s/%s: this node takes no uploads", namespace, name), http.StatusServiceUnavailable)
		return
	}
	async := r.URL.Query().Get(AsyncParam) == "true"
	finish, err := recv.ReceiveUpload(r.Context(), namespace, name, r.Body)
	if err == nil && (!async || background == nil) {
		err = finish(r.Context())
	} else if err == nil {
		background(func(ctx context.Context) { _ = finish(ctx) })
	}
	if err != nil {
		if r.Context().Err() != nil {
			return
		}
		code, msg := failure(err)
		http.Error(w, msg, code)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// ServerError is an upload server's refusal of a forwarded upload: its
// HTTP status and message (meant for the uploader), which the proxy
// passes on.
type ServerError struct {
	Code    int
	Message string
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("upload server: %d %s: %s", e.Code, http.StatusText(e.Code), e.Message)
}

// Locator finds the upload server of the node holding DataVolume
// namespace/name: its base URL (https://HOST:PORT).
type Locator interface {
	LocateUpload(ctx context.Context, namespace, name string) (string, error)
}

// Forwarder sends uploads to the upload server of the volume's node.
type Forwarder struct {
	// Client reaches the upload servers (mutual TLS); required.
	Client *http.Client
	// Locator finds them; required.
	Locator Locator
}

// maxServerErrorBytes bounds the error message read from an upload server.
const maxServerErrorBytes = 4 << 10

// ForwardUpload streams body to the upload server of DataVolume
// namespace/name and returns once it answered: once the data is received
// when async, else once it is in the volume. A refusal is a *ServerError.
func (f *Forwarder) ForwardUpload(ctx context.Context, namespace, name string, body io.Reader, async bool) error {
	if f.Client == nil || f.Locator == nil {
		return fmt.Errorf("%w: Forwarder: Client and Locator are required", ErrInvalidProxyOptions)
	}
	base, err := f.Locator.LocateUpload(ctx, namespace, name)
	if err != nil {
		return err
	}
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("datavolume %s/%s: upload server %q is not an https URL", namespace, name, base)
	}
	u.Path = ServerPath(namespace, name)
	if async {
		u.RawQuery = AsyncParam + "=true"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), io.NopCloser(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := f.Client.Do(req)
	if err != nil {
		return fmt.Errorf("datavolume %s/%s: forwarding the upload to its node: %w", namespace, name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxServerErrorBytes))
	return &ServerError{Code: resp.StatusCode, Message: strings.TrimSpace(string(msg))}
}
