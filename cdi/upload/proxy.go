package upload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/virtkit/virtkit/cdi/importer"
)

// Paths the proxy serves, as CDI's upload proxy does.
const (
	PathUpload          = "/v1beta1/upload"
	PathUploadAsync     = "/v1beta1/upload-async"
	PathUploadForm      = "/v1beta1/upload-form"
	PathUploadFormAsync = "/v1beta1/upload-form-async"
	PathHealthz         = "/healthz"
)

// FormFileField is the multipart field holding the image of a form upload.
const FormFileField = "file"

// Receiver takes the data of an upload to claim namespace/name and returns
// the step that puts it into the volume (importer.Worker.ReceiveUpload;
// cluster.Cluster routes to the worker of the volume's node).
type Receiver interface {
	ReceiveUpload(ctx context.Context, namespace, name string, body io.Reader) (finish func(context.Context) error, err error)
}

// UploadForwarder hands a whole upload to the upload server of the
// volume's node ([Forwarder] does).
type UploadForwarder interface {
	ForwardUpload(ctx context.Context, namespace, name string, body io.Reader, async bool) error
}

// ProxyOptions configure a Proxy. Tokens, and Receiver or Forwarder, are
// required.
type ProxyOptions struct {
	// Tokens verifies the uploads' tokens; the API server issuing them
	// must use the same key.
	Tokens *Tokens
	// Receiver takes the uploads to the volumes of this process's nodes;
	// nil forwards every upload.
	Receiver Receiver
	// Forwarder takes the uploads Receiver refuses with [ErrElsewhere]
	// (the volume is on a node another process runs): it forwards them
	// to the upload server of that node. Nil answers them 503.
	Forwarder UploadForwarder
	// Logger; nil discards.
	Logger *slog.Logger
}

// Proxy is the upload proxy: an http.Handler to serve over TLS.
type Proxy struct {
	opts ProxyOptions
	log  *slog.Logger
	// ctx bounds the conversions of async uploads, which outlive their
	// request; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// ErrInvalidProxyOptions wraps configuration errors of NewProxy.
var ErrInvalidProxyOptions = errors.New("invalid upload proxy options")

// NewProxy checks opts.
func NewProxy(opts ProxyOptions) (*Proxy, error) {
	switch {
	case opts.Tokens == nil:
		return nil, fmt.Errorf("%w: Tokens: required", ErrInvalidProxyOptions)
	case opts.Receiver == nil && opts.Forwarder == nil:
		return nil, fmt.Errorf("%w: Receiver or Forwarder: required", ErrInvalidProxyOptions)
	}
	if err := opts.Tokens.check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidProxyOptions, err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Proxy{opts: opts, log: log, ctx: ctx, cancel: cancel}, nil
}

// Close stops the conversions of async uploads still running and waits
// for them.
func (p *Proxy) Close() {
	p.cancel()
	p.wg.Wait()
}

// Wait waits for the conversions of async uploads running.
func (p *Proxy) Wait() { p.wg.Wait() }

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	if path == PathHealthz {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "OK\n")
		return
	}
	var async, form bool
	switch path {
	case PathUpload:
	case PathUploadAsync:
		async = true
	case PathUploadForm:
		form = true
	case PathUploadFormAsync:
		async, form = true, true
	default:
		http.NotFound(w, r)
		return
	}
	claims, err := p.authorize(r)
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="upload"`)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	switch r.Method {
	case http.MethodHead:
		// virtctl asks whether the async endpoint exists.
		w.WriteHeader(http.StatusOK)
		return
	case http.MethodPost, http.MethodPut:
	default:
		w.Header().Set("Allow", "HEAD, POST, PUT")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body := io.Reader(r.Body)
	if form {
		part, err := formFile(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer part.Close()
		body = part
	}
	key := claims.Namespace + "/" + claims.Name
	p.log.InfoContext(r.Context(), "upload started", "claim", key, "async", async)
	var finish func(context.Context) error
	err = fmt.Errorf("%w: no local receiver", ErrElsewhere)
	if p.opts.Receiver != nil {
		finish, err = p.opts.Receiver.ReceiveUpload(r.Context(), claims.Namespace, claims.Name, body)
	}
	if errors.Is(err, ErrElsewhere) && p.opts.Forwarder != nil {
		// The volume's node runs in another process: its upload server
		// takes the data, as CDI's proxy hands it to the upload pod.
		if err := p.opts.Forwarder.ForwardUpload(r.Context(), claims.Namespace, claims.Name, body, async); err != nil {
			p.fail(w, r, key, err)
			return
		}
		p.log.InfoContext(r.Context(), "upload forwarded", "claim", key, "async", async)
		w.WriteHeader(http.StatusOK)
		return
	}
	if err != nil {
		p.fail(w, r, key, err)
		return
	}
	if async {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			if err := finish(p.ctx); err != nil {
				p.log.Warn("upload processing failed", "claim", key, "err", err)
				return
			}
			p.log.Info("upload processed", "claim", key)
		}()
		w.WriteHeader(http.StatusOK)
		return
	}
	if err := finish(r.Context()); err != nil {
		p.fail(w, r, key, err)
		return
	}
	p.log.InfoContext(r.Context(), "upload processed", "claim", key)
	w.WriteHeader(http.StatusOK)
}

// authorize checks the request's bearer token.
func (p *Proxy) authorize(r *http.Request) (Claims, error) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		return Claims{}, errors.New("an upload token is required (Authorization: Bearer TOKEN)")
	}
	c, err := p.opts.Tokens.Verify(strings.TrimSpace(token))
	if err != nil {
		return Claims{}, err
	}
	return c, nil
}

// formFile returns the "file" part of a multipart/form-data request.
func formFile(r *http.Request) (io.ReadCloser, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		return nil, errors.New("a form upload needs a multipart/form-data body")
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, fmt.Errorf("reading the form: %w", err)
	}
	for {
		part, err := mr.NextPart()
		if err != nil {
			return nil, fmt.Errorf("the form has no %q field", FormFileField)
		}
		if part.FormName() == FormFileField {
			return part, nil
		}
		_ = part.Close()
	}
}

// fail answers a failed upload (see failure); a client gone away gets no
// answer.
func (p *Proxy) fail(w http.ResponseWriter, r *http.Request, key string, err error) {
	var se *ServerError
	if r.Context().Err() != nil && !errors.As(err, &se) {
		return // the uploader went away
	}
	code, msg := failure(err)
	p.log.WarnContext(r.Context(), "upload failed", "claim", key, "status", code, "err", err)
	http.Error(w, msg, code)
}

// failure is the answer to a failed upload: the uploader's mistakes 400,
// a volume that is not ready or busy 503 and 409 (virtctl retries), an
// upload server's refusal its own status and message, the rest 500; the
// message never carries a node path.
func failure(err error) (code int, msg string) {
	var se *ServerError
	switch {
	case errors.As(err, &se):
		return se.Code, se.Message
	case errors.Is(err, importer.ErrUploadInProgress):
		return http.StatusConflict, importer.TenantMessage(err)
	case errors.Is(err, importer.ErrNotUploadReady), errors.Is(err, ErrElsewhere):
		return http.StatusServiceUnavailable, err.Error() // names the volume and its state, no node path
	case importer.Permanent(err):
		return http.StatusBadRequest, importer.TenantMessage(err)
	}
	return http.StatusInternalServerError, importer.TenantMessage(err)
}
