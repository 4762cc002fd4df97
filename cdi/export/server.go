package export

import (
	"compress/gzip"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// URL paths of the export server (KubeVirt's).
const (
	// VolumesPath is the prefix of the volume URLs.
	VolumesPath = "/volumes/"
	// RawFile is the raw image's file name in a volume's URL.
	RawFile = "disk.img"
	// GzipFile is the gzipped raw image's file name.
	GzipFile = "disk.img.gz"
	// ArchiveFile and DirPath are where KubeVirt's export server serves a
	// filesystem claim holding files rather than a disk image (content
	// type archive): its root as a tar.gz and as a directory listing
	// (formats tar.gz and dir). virtkit's volumes are always disk images
	// (a DataVolume of content type archive is refused), so these paths
	// answer 404 naming the format.
	ArchiveFile = "disk.tar.gz"
	DirPath     = "dir"
	// ReadyPath answers 200 once the server serves (no token needed).
	ReadyPath = "/exportready"
	// TokenHeader is the header, and the query parameter, holding the token.
	TokenHeader = "x-kubevirt-export-token"
)

// DefaultMaxConcurrent is how many downloads a server runs at once when
// Options.MaxConcurrent is 0; more get 503 Service Unavailable.
const DefaultMaxConcurrent = 4

// Options configure a Server.
type Options struct {
	// Addr is the address to listen on; empty is 127.0.0.1:0 (loopback,
	// a free port).
	Addr string
	// CA signs the server's certificate; required.
	CA *CA
	// Hosts are the names the certificate is for besides the listening
	// address's IP.
	Hosts []string
	// AllowedDirs are the directories the volumes' files must lie under
	// (absolute); a volume elsewhere is refused with ErrPathNotAllowed.
	// Required when there are volumes.
	AllowedDirs []string
	// Token is what a request must present; required.
	Token []byte
	// Volumes are the exported volumes.
	Volumes []Volume
	// ExternalPrefix, when set, also serves the volumes below this path
	// prefix (KubeVirt's external links:
	// /api/export.kubevirt.io/v1/namespaces/NS/virtualmachineexports/NAME).
	ExternalPrefix string
	// MaxConcurrent bounds the downloads served at once; 0 is
	// DefaultMaxConcurrent.
	MaxConcurrent int
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
}

// Server serves an export's volumes over HTTPS.
type Server struct {
	ln      net.Listener
	srv     *http.Server
	url     string
	token   []byte
	prefix  string
	volumes map[string]string
	sem     chan struct{}
	log     *slog.Logger
}

// Listen checks the volumes, binds the listener and returns the server;
// Serve serves it.
func Listen(o Options) (*Server, error) {
	if o.CA == nil {
		return nil, fmt.Errorf("export server options: CA: required: %w", errInvalidOptions)
	}
	if len(o.Token) == 0 {
		return nil, fmt.Errorf("export server options: Token: required: %w", errInvalidOptions)
	}
	dirs, err := resolveDirs(o.AllowedDirs)
	if err != nil {
		return nil, err
	}
	vols := make(map[string]string, len(o.Volumes))
	for _, v := range o.Volumes {
		if _, dup := vols[v.Name]; dup {
			return nil, fmt.Errorf("volume %s: duplicate name: %w", v.Name, errInvalidOptions)
		}
		p, err := checkVolume(v, dirs)
		if err != nil {
			return nil, err
		}
		vols[v.Name] = p
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = DefaultMaxConcurrent
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	addr := o.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(ln.Addr().String())
	cert, err := o.CA.Issue(append([]string{host}, o.Hosts...))
	if err != nil {
		ln.Close()
		return nil, err
	}
	s := &Server{
		token:   append([]byte(nil), o.Token...),
		prefix:  strings.TrimSuffix(o.ExternalPrefix, "/"),
		volumes: vols,
		sem:     make(chan struct{}, o.MaxConcurrent),
		log:     o.Logger,
		url:     "https://" + ln.Addr().String(),
	}
	s.ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	s.srv = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       time.Minute,
		ErrorLog:          slog.NewLogLogger(o.Logger.Handler(), slog.LevelDebug),
	}
	return s, nil
}

// URL is the server's base URL (https://127.0.0.1:PORT).
func (s *Server) URL() string { return s.url }

// Serve serves until ctx ends, then stops (downloads in flight are
// given five seconds to finish) and returns nil.
func (s *Server) Serve(ctx context.Context) error {
	s.srv.BaseContext = func(net.Listener) context.Context { return ctx }
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil {
		_ = s.srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Close stops a server that is not serving (Listen succeeded, Serve was
// never called).
func (s *Server) Close() error { return s.ln.Close() }

// Handler is the server's HTTP handler (without TLS), for tests and for
// callers that serve it themselves.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if s.prefix != "" && strings.HasPrefix(path, s.prefix+"/") {
		path = path[len(s.prefix):]
	}
	if path == ReadyPath {
		w.WriteHeader(http.StatusOK)
		return
	}
	if !s.authorized(r) {
		http.Error(w, "a valid "+TokenHeader+" header or query parameter is required", http.StatusUnauthorized)
		return
	}
	rest, ok := strings.CutPrefix(path, VolumesPath)
	name, file, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 {
		http.NotFound(w, r)
		return
	}
	p, known := s.volumes[name]
	if known && (file == ArchiveFile || file == DirPath || strings.HasPrefix(file, DirPath+"/")) {
		format := "tar.gz"
		if file != ArchiveFile {
			format = "dir"
		}
		http.Error(w, fmt.Sprintf("volume %s: format %s serves a filesystem claim's files (content type archive); this volume is a disk image, served as raw (%s) and gzip (%s)",
			name, format, RawFile, GzipFile), http.StatusNotFound)
		return
	}
	if !known || (file != RawFile && file != GzipFile) {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	select {
	case s.sem <- struct{}{}:
		defer func() { <-s.sem }()
	default:
		w.Header().Set("Retry-After", "5")
		http.Error(w, "too many downloads in progress", http.StatusServiceUnavailable)
		return
	}
	f, err := os.Open(p)
	if err != nil {
		s.log.Warn("open exported volume", "volume", name, "err", err)
		http.Error(w, "volume unavailable", http.StatusInternalServerError)
		return
	}
	defer f.Close()
	if err := checkRaw(f); err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	fi, err := f.Stat()
	if err != nil {
		http.Error(w, "volume unavailable", http.StatusInternalServerError)
		return
	}
	body := &ctxFile{ctx: r.Context(), f: f}
	w.Header().Set("Content-Type", "application/octet-stream")
	if file == RawFile {
		http.ServeContent(w, r, RawFile, fi.ModTime(), body)
		return
	}
	w.Header().Set("Content-Type", "application/gzip")
	if r.Method == http.MethodHead {
		return
	}
	gz, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if _, err := io.CopyBuffer(gz, body, make([]byte, 1<<20)); err != nil {
		// The client went away or the server stops: the truncated
		// stream lacks gzip's trailer, so the client sees the failure.
		s.log.Debug("gzip download stopped", "volume", name, "err", err)
		return
	}
	if err := gz.Close(); err != nil {
		s.log.Debug("gzip download stopped", "volume", name, "err", err)
	}
}

// authorized compares the request's token with the server's in constant
// time.
func (s *Server) authorized(r *http.Request) bool {
	got := r.Header.Get(TokenHeader)
	if got == "" {
		got = r.URL.Query().Get(TokenHeader)
	}
	return got != "" && subtle.ConstantTimeCompare([]byte(got), s.token) == 1
}

// ctxFile reads a file until its context ends.
type ctxFile struct {
	ctx context.Context
	f   *os.File
}

func (c *ctxFile) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.f.Read(p)
}

func (c *ctxFile) Seek(offset int64, whence int) (int64, error) {
	return c.f.Seek(offset, whence)
}
