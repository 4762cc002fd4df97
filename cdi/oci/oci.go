package oci

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/virtkit/virtkit/internal/netpolicy"
)

// Errors of a pull; every error of Pull wraps ErrPull.
var (
	// ErrPull: the image could not be pulled (the node reports
	// ErrImagePull / ImagePullBackOff).
	ErrPull = errors.New("image pull failed")
	// ErrNotFound: the registry does not have the image.
	ErrNotFound = errors.New("image not found")
	// ErrUnauthorized: the registry refused the credentials.
	ErrUnauthorized = errors.New("registry refused credentials")
	// ErrNoDisk: the image holds no disk under /disk/ (or at the path).
	ErrNoDisk = errors.New("image holds no disk")
	// ErrNotPresent: policy Never and the image is not cached.
	ErrNotPresent = errors.New("image not present with pull policy Never")
	// ErrTooLarge: the disk is larger than Options.MaxBytes or
	// Request.MaxBytes.
	ErrTooLarge = errors.New("disk in image exceeds the size limit")
	// ErrAddressNotAllowed: the registry (or a redirect of it) resolves
	// to an address the node does not dial for tenants (see
	// Options.AllowedNetworks).
	ErrAddressNotAllowed = netpolicy.ErrForbidden
)

// Pull policies (Kubernetes' names).
const (
	PullAlways       = "Always"
	PullIfNotPresent = "IfNotPresent"
	PullNever        = "Never"
)

// DefaultMaxBytes bounds the disk taken from an image: 64 GiB.
const DefaultMaxBytes int64 = 64 << 30

// Options configure a Puller. The zero value works once CacheDir is set.
type Options struct {
	// CacheDir holds the extracted disks (by digest) and the tag index.
	CacheDir string
	// Transport is the HTTP transport to the registries; nil is a clone
	// of http.DefaultTransport. It must be an *http.Transport: the puller
	// holds it to the address policy (AllowedNetworks).
	Transport http.RoundTripper
	// AllowedNetworks are networks a pull may reach although the address
	// policy refuses them by default: loopback, link-local (and the
	// metadata address 169.254.169.254), unspecified and multicast
	// addresses and the node's own addresses. The policy is checked on the
	// resolved address of every connection, redirects to blob storage
	// included.
	AllowedNetworks []netip.Prefix
	// Insecure allows plain-HTTP registries besides loopback ones (which
	// go-containerregistry always reaches over HTTP).
	Insecure bool
	// MaxBytes bounds a disk's size; 0 is DefaultMaxBytes.
	MaxBytes int64
	// Platform selects one image of a multi-platform index; nil is
	// linux/amd64.
	Platform *v1.Platform
	// Logger; nil discards.
	Logger *slog.Logger
}

// Request is one pull.
type Request struct {
	// Image is the reference (registry/repository[:tag|@digest]); a
	// docker:// prefix is accepted.
	Image string
	// Path is the disk's path inside the image; empty takes the one
	// regular file under /disk/.
	Path string
	// Policy is Always, IfNotPresent or Never; empty is Kubernetes'
	// default: Always for a :latest or untagged image, else IfNotPresent.
	Policy string
	// Auth authenticates to the registry; nil is anonymous.
	Auth authn.Authenticator
	// Architecture picks the image of a multi-platform index (linux/ARCH);
	// empty is Options.Platform.
	Architecture string
	// Progress, when set, is told the bytes extracted so far and the
	// compressed size of the layers (0 when unknown).
	Progress func(done, total int64)
	// MaxBytes bounds this pull below Options.MaxBytes (an import's
	// requested size): a disk declaring more is refused before a byte of
	// it is copied, and no layer is read past it. 0 is Options.MaxBytes.
	MaxBytes int64
}

// Result is a pulled disk.
type Result struct {
	// Path is the cached disk file; treat it as read-only.
	Path string
	// Digest is the image manifest's digest.
	Digest string
	// Cached: the disk came from the cache without extraction.
	Cached bool
	// Size is the disk file's size in bytes.
	Size int64
}

// Puller pulls disks from registries into a cache. Safe for concurrent
// use: concurrent pulls of one digest extract it once.
type Puller struct {
	opts Options
	log  *slog.Logger

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// New returns a Puller over opts.
func New(opts Options) (*Puller, error) {
	if opts.CacheDir == "" {
		return nil, fmt.Errorf("oci: Options.CacheDir is required")
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	rt, err := netpolicy.Policy{Allowed: opts.AllowedNetworks}.RoundTripper(opts.Transport)
	if err != nil {
		return nil, fmt.Errorf("oci: Options.Transport: %w", err)
	}
	opts.Transport = rt
	if opts.Platform == nil {
		opts.Platform = &v1.Platform{OS: "linux", Architecture: "amd64"}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Puller{opts: opts, log: log, locks: map[string]*sync.Mutex{}}, nil
}

// DefaultPolicy is Kubernetes' default pull policy for a reference.
func DefaultPolicy(image string) string {
	ref, err := name.ParseReference(strings.TrimPrefix(image, "docker://"))
	if err != nil {
		return PullIfNotPresent
	}
	if t, ok := ref.(name.Tag); ok && (t.TagStr() == "latest" || !strings.Contains(lastElem(image), ":")) {
		return PullAlways
	}
	return PullIfNotPresent
}

func lastElem(image string) string {
	if i := strings.LastIndexByte(image, '/'); i >= 0 {
		return image[i+1:]
	}
	return image
}

// Pull returns the disk of req.Image, from the cache when the policy allows.
func (p *Puller) Pull(ctx context.Context, req Request) (Result, error) {
	res, err := p.pull(ctx, req)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %s: %w", ErrPull, req.Image, err)
	}
	return res, nil
}

func (p *Puller) pull(ctx context.Context, req Request) (Result, error) {
	image := strings.TrimPrefix(req.Image, "docker://")
	var nopts []name.Option
	if p.opts.Insecure {
		nopts = append(nopts, name.Insecure)
	}
	ref, err := name.ParseReference(image, nopts...)
	if err != nil {
		return Result{}, fmt.Errorf("invalid reference: %w", err)
	}
	policy := req.Policy
	if policy == "" {
		policy = DefaultPolicy(image)
	}
	diskPath, err := cleanDiskPath(req.Path)
	if err != nil {
		return Result{}, err
	}
	platform := *p.opts.Platform
	if req.Architecture != "" {
		platform = v1.Platform{OS: "linux", Architecture: req.Architecture}
	}
	auth := req.Auth
	if auth == nil {
		auth = authn.Anonymous
	}
	// The cache answers IfNotPresent and Never without the network, for
	// a pull that may have the image (see access.go); another pull asks
	// the registry.
	if policy != PullAlways {
		if digest, ok := p.indexed(ref, platform); ok {
			if res, ok := p.cached(digest, diskPath); ok {
				if p.mayServe(digest, ref, auth) {
					return res, nil
				}
				if policy == PullNever {
					return Result{}, fmt.Errorf("%w: cached for other credentials", ErrNotPresent)
				}
			}
		}
		if policy == PullNever {
			return Result{}, ErrNotPresent
		}
	}
	ropts := []remote.Option{remote.WithContext(ctx), remote.WithTransport(p.opts.Transport), remote.WithAuth(auth),
		remote.WithPlatform(platform)}
	desc, err := remote.Get(ref, ropts...)
	if err != nil {
		return Result{}, classify(err)
	}
	// An index resolves to the platform's image: the cache is keyed by
	// that image's manifest digest.
	img, err := desc.Image()
	if err != nil {
		return Result{}, classify(err)
	}
	h, err := img.Digest()
	if err != nil {
		return Result{}, classify(err)
	}
	digest := h.String()
	p.remember(ref, platform, digest)
	if err := p.recordAccess(digest, ref, auth); err != nil {
		return Result{}, fmt.Errorf("recording access to the cached image: %w", err)
	}
	lock := p.lock(digest + "|" + diskPath)
	lock.Lock()
	defer lock.Unlock()
	if res, ok := p.cached(digest, diskPath); ok {
		return res, nil
	}
	limit := p.opts.MaxBytes
	if req.MaxBytes > 0 {
		limit = min(limit, req.MaxBytes)
	}
	return p.extract(ctx, img, digest, diskPath, limit, req.Progress)
}

// cleanDiskPath turns the user's path into a clean relative tar path
// ("disk/x.qcow2"); empty stays empty (the one file under disk/).
func cleanDiskPath(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	c := path.Clean("/" + p)
	if c == "/" {
		return "", fmt.Errorf("path %q names no file", p)
	}
	return strings.TrimPrefix(c, "/"), nil
}

func classify(err error) error {
	var terr *transport.Error
	if errors.As(err, &terr) {
		switch terr.StatusCode {
		case http.StatusNotFound:
			return fmt.Errorf("%w: %w", ErrNotFound, err)
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("%w: %w", ErrUnauthorized, err)
		}
		for _, d := range terr.Errors {
			if d.Code == transport.ManifestUnknownErrorCode || d.Code == transport.NameUnknownErrorCode {
				return fmt.Errorf("%w: %w", ErrNotFound, err)
			}
		}
	}
	return err
}

func (p *Puller) lock(key string) *sync.Mutex {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.locks[key]
	if !ok {
		l = &sync.Mutex{}
		p.locks[key] = l
	}
	return l
}

func digestDir(cacheDir, digest string) string {
	return filepath.Join(cacheDir, "blobs", strings.ReplaceAll(digest, ":", "_"))
}

func diskFile(cacheDir, digest, diskPath string) string {
	key := "default"
	if diskPath != "" {
		sum := sha256.Sum256([]byte(diskPath))
		key = hex.EncodeToString(sum[:8])
	}
	return filepath.Join(digestDir(cacheDir, digest), key+".img")
}

func (p *Puller) cached(digest, diskPath string) (Result, bool) {
	f := diskFile(p.opts.CacheDir, digest, diskPath)
	st, err := os.Stat(f)
	if err != nil || !st.Mode().IsRegular() {
		return Result{}, false
	}
	return Result{Path: f, Digest: digest, Cached: true, Size: st.Size()}, true
}

// refFile records which image manifest a reference resolved to for a
// platform.
func refFile(cacheDir string, ref name.Reference, platform v1.Platform) string {
	sum := sha256.Sum256([]byte(ref.Name() + "|" + platform.OS + "/" + platform.Architecture))
	return filepath.Join(cacheDir, "refs", hex.EncodeToString(sum[:16]))
}

func (p *Puller) indexed(ref name.Reference, platform v1.Platform) (string, bool) {
	b, err := os.ReadFile(refFile(p.opts.CacheDir, ref, platform))
	if err == nil && len(b) <= 200 {
		if _, err := v1.NewHash(strings.TrimSpace(string(b))); err == nil {
			return strings.TrimSpace(string(b)), true
		}
	}
	// A digest reference names the image itself (unless it is an index,
	// which only the record above resolves).
	if d, ok := ref.(name.Digest); ok {
		return d.DigestStr(), true
	}
	return "", false
}

func (p *Puller) remember(ref name.Reference, platform v1.Platform, digest string) {
	f := refFile(p.opts.CacheDir, ref, platform)
	if err := writeAtomic(f, []byte(digest)); err != nil {
		p.log.Warn("cannot index image reference", "ref", ref.Name(), "err", err)
	}
}

func writeAtomic(f string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(f), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), f)
}

// extract finds the disk in the image's layers, top layer first (a file in
// a higher layer hides the same path below), and copies it into the cache
// through a temporary name.
func (p *Puller) extract(ctx context.Context, img v1.Image, digest, diskPath string, limit int64, progress func(done, total int64)) (Result, error) {
	layers, err := img.Layers()
	if err != nil {
		return Result{}, classify(err)
	}
	var total int64
	for _, l := range layers {
		if n, err := l.Size(); err == nil {
			total += n
		}
	}
	dst := diskFile(p.opts.CacheDir, digest, diskPath)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return Result{}, err
	}
	for i := len(layers) - 1; i >= 0; i-- {
		found, hidden, err := p.extractLayer(ctx, layers[i], diskPath, dst, limit, func(n int64) {
			if progress != nil {
				progress(n, total)
			}
		})
		if err != nil {
			return Result{}, err
		}
		if found {
			st, err := os.Stat(dst)
			if err != nil {
				return Result{}, err
			}
			p.log.Info("pulled disk", "digest", digest, "bytes", st.Size())
			return Result{Path: dst, Digest: digest, Size: st.Size()}, nil
		}
		if hidden {
			break
		}
	}
	if diskPath != "" {
		return Result{}, fmt.Errorf("%w: no regular file at /%s", ErrNoDisk, diskPath)
	}
	return Result{}, fmt.Errorf("%w: no regular file under /disk/", ErrNoDisk)
}

// extractLayer copies the disk out of one layer when it is there; hidden
// reports a whiteout of it (the image deleted the disk).
func (p *Puller) extractLayer(ctx context.Context, l v1.Layer, diskPath, dst string, limit int64, progress func(int64)) (found, hidden bool, err error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return false, false, classify(err)
	}
	defer rc.Close()
	// No layer is read much past the limit, whatever it holds before
	// the disk (the tar headers and padding get some room).
	lr := &limitReader{r: &ctxReader{ctx: ctx, r: rc}, left: limit + layerSlack, limit: limit}
	tr := tar.NewReader(lr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return false, false, nil
		}
		if err != nil {
			return false, false, fmt.Errorf("read layer: %w", classify(err))
		}
		entry := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		dir, base := path.Split(entry)
		if strings.HasPrefix(base, ".wh.") {
			whited := dir + strings.TrimPrefix(base, ".wh.")
			if whited == diskPath || (diskPath == "" && path.Clean(dir) == "disk") || base == ".wh..wh..opq" && path.Clean(dir) == "disk" {
				return false, true, nil
			}
			continue
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		match := entry == diskPath || diskPath == "" && path.Clean(dir) == "disk"
		if !match {
			continue
		}
		if h.Size > limit {
			return false, false, fmt.Errorf("%w: %s is %d bytes, limit %d", ErrTooLarge, entry, h.Size, limit)
		}
		if err := copyTo(dst, tr, h.Size, progress); err != nil {
			return false, false, err
		}
		return true, false, nil
	}
}

// copyTo writes exactly size bytes of r to dst through a temporary file,
// keeping runs of zeros sparse.
func copyTo(dst string, r io.Reader, size int64, progress func(int64)) error {
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".part-*")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	n, err := SparseCopy(tmp, io.LimitReader(r, size), progress)
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("disk truncated: %d of %d bytes", n, size)
	}
	if err := tmp.Truncate(size); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return err
	}
	ok = true
	return nil
}

// SparseCopy copies r to f, seeking over all-zero 64 KiB blocks instead of
// writing them, and reports bytes copied to progress. The caller truncates
// f to its final size (a trailing hole has no bytes written).
func SparseCopy(f *os.File, r io.Reader, progress func(int64)) (int64, error) {
	buf := make([]byte, 64<<10)
	var n int64
	for {
		m, err := io.ReadFull(r, buf)
		if m > 0 {
			if allZero(buf[:m]) {
				if _, serr := f.Seek(int64(m), io.SeekCurrent); serr != nil {
					return n, serr
				}
			} else if _, werr := f.Write(buf[:m]); werr != nil {
				return n, werr
			}
			n += int64(m)
			if progress != nil {
				progress(n)
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// ctxReader stops a read once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// layerSlack is what a layer may hold besides a disk of the limit's size:
// tar headers, padding, small files.
const layerSlack = 16 << 20

// limitReader fails with ErrTooLarge once more than left bytes were read.
type limitReader struct {
	r     io.Reader
	left  int64
	limit int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, fmt.Errorf("%w: the layer holds more than the %d byte limit", ErrTooLarge, l.limit)
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}
