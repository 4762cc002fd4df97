package importer

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/ulikunitz/xz"

	"github.com/virtkit/virtkit/cdi/oci"
	"github.com/virtkit/virtkit/cdi/storage"
	"github.com/virtkit/virtkit/internal/netpolicy"
)

// Errors of an import. ErrBadSource and the errors that wrap it are the
// source's fault: retrying will not help (see Permanent).
var (
	// ErrBadSource: the source is wrong (HTTP 4xx, a bad URL, ...).
	ErrBadSource = errors.New("bad import source")
	// ErrUnreachable: the source could not be reached (retried).
	ErrUnreachable = errors.New("import source unreachable")
	// ErrNotADisk: the data is not a disk image.
	ErrNotADisk = fmt.Errorf("%w: not a disk image", ErrBadSource)
	// ErrTooSmall: the requested size is smaller than the image.
	ErrTooSmall = fmt.Errorf("%w: requested size is smaller than the image", ErrBadSource)
	// ErrChecksum: the download does not match the checksum.
	ErrChecksum = fmt.Errorf("%w: checksum mismatch", ErrBadSource)
	// ErrTooLarge: the source exceeds Options.MaxBytes or, decompressed,
	// the request's size (see Request.Size).
	ErrTooLarge = fmt.Errorf("%w: source too large", ErrBadSource)
	// ErrNoSource: the request names no source.
	ErrNoSource = errors.New("import request names no source")
	// ErrAddressNotAllowed: the source (or a redirect) resolves to an
	// address the node does not dial for tenants (see
	// Options.AllowedNetworks).
	ErrAddressNotAllowed = netpolicy.ErrForbidden
)

// Permanent reports whether retrying an import that failed with err is
// pointless: the source itself is wrong.
func Permanent(err error) bool {
	return errors.Is(err, ErrBadSource) || errors.Is(err, oci.ErrNotFound) || errors.Is(err, oci.ErrNoDisk) ||
		errors.Is(err, oci.ErrUnauthorized) || errors.Is(err, oci.ErrTooLarge) || errors.Is(err, oci.ErrNotPresent) ||
		errors.Is(err, storage.ErrUnknownClass) || errors.Is(err, storage.ErrAccessMode) || errors.Is(err, ErrAddressNotAllowed)
}

// DefaultMaxBytes bounds a download: 64 GiB.
const DefaultMaxBytes int64 = 64 << 30

// Options configure an Importer. The zero value works once ScratchDir is
// set.
type Options struct {
	// ScratchDir holds partial downloads (kept across attempts so a retry
	// resumes) and decompressed sources.
	ScratchDir string
	// HTTPClient fetches http sources; nil is a client whose transport
	// waits at most 30 s for response headers. Its transport must be an
	// *http.Transport (or nil): the importer holds it to the address
	// policy (AllowedNetworks).
	HTTPClient *http.Client
	// AllowedNetworks are networks an import may reach although the
	// address policy refuses them by default: loopback, link-local (and
	// the metadata address 169.254.169.254), unspecified and multicast
	// addresses and the node's own addresses. The policy is checked on
	// the resolved address of every connection, redirects included. A
	// registry Puller has its own oci.Options.AllowedNetworks.
	AllowedNetworks []netip.Prefix
	// Puller pulls registry sources; nil refuses them.
	Puller *oci.Puller
	// QemuImg converts and resizes; its zero value confines qemu-img
	// with bubblewrap when bwrap is found (QemuImg.Sandbox). New logs
	// the confinement in use and fails when the one asked for is
	// unavailable.
	QemuImg QemuImg
	// MaxBytes bounds a download or a decompressed source; 0 is
	// DefaultMaxBytes.
	MaxBytes int64
	// IdleTimeout aborts a download that receives nothing for this long
	// (a stalled server); 0 is one minute. The attempt is retried and
	// resumes where it stopped.
	IdleTimeout time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
}

// Importer fills disks from sources.
type Importer struct {
	opts   Options
	client *http.Client
	policy netpolicy.Policy
	log    *slog.Logger
}

// New returns an importer over opts.
func New(opts Options) (*Importer, error) {
	if opts.ScratchDir == "" {
		return nil, errors.New("importer: Options.ScratchDir is required")
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = time.Minute
	}
	policy := netpolicy.Policy{Allowed: opts.AllowedNetworks}
	c := opts.HTTPClient
	if c == nil {
		t := policy.Transport(nil)
		t.ResponseHeaderTimeout = 30 * time.Second
		c = &http.Client{Transport: t}
	}
	c, err := policy.Client(c)
	if err != nil {
		return nil, fmt.Errorf("importer: Options.HTTPClient: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mode, err := opts.QemuImg.Confinement()
	if err != nil {
		return nil, fmt.Errorf("importer: Options.QemuImg: %w", err)
	}
	if mode == SandboxNone {
		log.Warn("qemu-img runs unconfined: it can open any host file the importer can (install bubblewrap to confine it)",
			"requested", string(opts.QemuImg.Sandbox))
	} else {
		log.Info("qemu-img confined to each import's source and target", "sandbox", string(mode))
	}
	opts.QemuImg.Sandbox = mode
	return &Importer{opts: opts, client: c, policy: policy, log: log}, nil
}

// RegistrySource is a registry image holding a disk under /disk/.
type RegistrySource struct {
	// Image is docker://registry/repository[:tag|@digest] (the prefix is
	// optional).
	Image string
	// Auth; nil is anonymous.
	Auth authn.Authenticator
	// Architecture picks one image of a multi-platform index; empty is
	// the puller's default (amd64).
	Architecture string
}

// Request is one import. Exactly one of HTTP, S3, Registry, Blank,
// ClonePath and File is set.
type Request struct {
	HTTP     *HTTPSource
	S3       *S3Source
	Registry *RegistrySource
	Blank    bool
	// ClonePath is the disk file of the volume to clone.
	ClonePath string
	// File is a local image file (an upload) whose format, compression
	// included, is detected as a download's is. It must not be larger
	// than SourceLimit(Size).
	File string
	// Target is the disk file to fill (raw).
	Target string
	// Size is the requested size in bytes: the target grows to it, and an
	// image larger than it fails; 0 keeps the image's size. It also bounds
	// the transfer: a download, a decompressed source or a registry disk
	// larger than Size plus room for image metadata (SourceLimit) stops
	// there with ErrTooLarge.
	Size int64
	// Key names this import's scratch space; the same key resumes an
	// interrupted download.
	Key string
	// Progress, when set, is told the share done, 0 to 100.
	Progress func(percent float64)
}

// Result describes a finished import.
type Result struct {
	// SourceFormat is what the source held (after decompression).
	SourceFormat Format
	// Compression is gz or xz when the source was compressed.
	Compression Format
	// VirtualSize of the source image; Size of the target.
	VirtualSize, Size int64
}

// Import runs one import.
func (im *Importer) Import(ctx context.Context, req Request) (Result, error) {
	if req.Target == "" {
		return Result{}, errors.New("importer: Request.Target is required")
	}
	scratch := im.scratchDir(req.Key)
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		return Result{}, err
	}
	limit := im.SourceLimit(req.Size)
	res, err := im.importTo(ctx, req, scratch, limit)
	if err != nil {
		// Decompressed copies are remade from the source; a partial
		// download stays for a retry to resume unless retrying is
		// pointless.
		if Permanent(err) {
			_ = os.RemoveAll(scratch)
		} else {
			removeDecompressed(scratch)
		}
		return Result{}, err
	}
	return res, nil
}

// removeDecompressed deletes the decompressed copies in a scratch
// directory.
func removeDecompressed(scratch string) {
	m, _ := filepath.Glob(filepath.Join(scratch, "decompressed-*"))
	for _, f := range m {
		_ = os.Remove(f)
	}
}

func (im *Importer) importTo(ctx context.Context, req Request, scratch string, limit int64) (Result, error) {
	progress := func(p float64) {
		if req.Progress != nil {
			req.Progress(min(p, 100))
		}
	}
	if req.Blank {
		if req.Size <= 0 {
			return Result{}, public(fmt.Errorf("%w: a blank image needs a size", ErrBadSource), "a blank image needs a size")
		}
		err := im.commit(req.Target, func(tmp string) error {
			f, err := os.Create(tmp)
			if err != nil {
				return err
			}
			if err := f.Truncate(req.Size); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		})
		if err != nil {
			return Result{}, err
		}
		progress(100)
		os.RemoveAll(scratch)
		return Result{SourceFormat: FormatRaw, VirtualSize: req.Size, Size: req.Size}, nil
	}
	var src string
	var known Format
	switch {
	case req.HTTP != nil:
		src = filepath.Join(scratch, "source")
		err := im.download(ctx, *req.HTTP, src, limit, func(done, total int64) {
			if total > 0 {
				progress(float64(done) * 100 / float64(total) * 0.99)
			}
		})
		if err != nil {
			return Result{}, err
		}
		if req.HTTP.Checksum != "" {
			if err := verifyChecksum(ctx, src, req.HTTP.Checksum); err != nil {
				os.Remove(src) // a corrupt download must not be resumed
				return Result{}, err
			}
		}
	case req.S3 != nil:
		src = filepath.Join(scratch, "source")
		err := im.downloadS3(ctx, *req.S3, src, limit, func(done, total int64) {
			if total > 0 {
				progress(float64(done) * 100 / float64(total) * 0.99)
			}
		})
		if err != nil {
			return Result{}, err
		}
	case req.File != "":
		st, err := os.Stat(req.File)
		if err != nil {
			return Result{}, fmt.Errorf("import file: %w", err)
		}
		if st.Size() > limit {
			return Result{}, public(fmt.Errorf("%w: %s is %d bytes, limit %d", ErrTooLarge, req.File, st.Size(), limit), "the source is %d bytes, more than the %d the requested size allows", st.Size(), limit)
		}
		src = req.File
	case req.Registry != nil:
		if im.opts.Puller == nil {
			return Result{}, public(fmt.Errorf("%w: registry imports need a Puller", ErrBadSource), "this node does not import from registries")
		}
		res, err := im.opts.Puller.Pull(ctx, oci.Request{Image: req.Registry.Image, Auth: req.Registry.Auth, Policy: oci.PullIfNotPresent,
			Architecture: req.Registry.Architecture, MaxBytes: limit,
			Progress: func(done, total int64) {
				if total > 0 {
					progress(float64(done) * 100 / float64(total) * 0.99)
				}
			}})
		if err != nil {
			return Result{}, err
		}
		if res.Size > limit { // cached by an earlier, larger import
			return Result{}, public(fmt.Errorf("%w: registry disk is %d bytes, limit %d", ErrTooLarge, res.Size, limit), "the registry disk is %d bytes, more than the %d the requested size allows", res.Size, limit)
		}
		src = res.Path
	case req.ClonePath != "":
		if _, err := os.Stat(req.ClonePath); err != nil {
			return Result{}, fmt.Errorf("clone source: %w", err)
		}
		// The source is a raw disk this importer wrote; whatever its
		// guest wrote into it (a qcow2 header naming a host file) is
		// data, not a format.
		src, known = req.ClonePath, FormatRaw
	default:
		return Result{}, ErrNoSource
	}
	res, err := im.convert(ctx, src, scratch, known, limit, req)
	if err != nil {
		return Result{}, err
	}
	progress(100)
	os.RemoveAll(scratch)
	return res, nil
}

// SourceLimit is the most a source may hold for an import of size bytes:
// the size plus room for a qcow2's metadata (1/32 and 4 MiB), within
// Options.MaxBytes; 0 is Options.MaxBytes.
func (im *Importer) SourceLimit(size int64) int64 {
	if size <= 0 || size > im.opts.MaxBytes {
		return im.opts.MaxBytes
	}
	return min(im.opts.MaxBytes, size+size/32+4<<20)
}

// RemoveScratch deletes the scratch space of the import named key: its
// partial download and decompressed files.
func (im *Importer) RemoveScratch(key string) error {
	return os.RemoveAll(im.scratchDir(key))
}

func (im *Importer) scratchDir(key string) string {
	return filepath.Join(im.opts.ScratchDir, storage.Sanitize(key))
}

// convert decompresses src when needed, checks it is a disk image that fits
// req.Size, and writes the raw target. A known format skips detection.
func (im *Importer) convert(ctx context.Context, src, scratch string, known Format, limit int64, req Request) (Result, error) {
	var res Result
	format, err := known, error(nil)
	if format == "" {
		if format, err = DetectFile(src); err != nil {
			return res, err
		}
	}
	for range 2 { // a compressed file may hold another (qcow2.xz, raw.gz)
		if format != FormatGzip && format != FormatXz {
			break
		}
		res.Compression = format
		out := filepath.Join(scratch, "decompressed-"+string(format))
		if err := im.decompress(ctx, src, format, out, limit); err != nil {
			return res, err
		}
		src = out
		if format, err = DetectFile(src); err != nil {
			return res, err
		}
	}
	if format == FormatRaw && known == "" {
		hdr, err := readHeader(src)
		if err != nil {
			return res, err
		}
		if len(hdr) == 0 {
			return res, public(fmt.Errorf("%w: the source is empty", ErrNotADisk), "not a disk image: the source is empty")
		}
		if looksLikeText(hdr) {
			return res, public(fmt.Errorf("%w: the source is text (an error page?)", ErrNotADisk), "not a disk image: the source is text (an error page?)")
		}
	}
	qfmt := format
	if qfmt == FormatISO {
		qfmt = FormatRaw
	}
	if qfmt == FormatQcow2 {
		if err := checkQcow2Header(src); err != nil {
			return res, err
		}
	}
	info, err := im.opts.QemuImg.Info(ctx, src, qfmt)
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		if errors.Is(err, ErrNoSandbox) {
			return res, err // the node's fault, not the image's
		}
		return res, fmt.Errorf("%w: %w", ErrNotADisk, err)
	}
	if ref := info.externalReference(); ref != "" {
		return res, fmt.Errorf("%w: %s", ErrExternalReference, ref)
	}
	if info.Format != "" && info.Format != string(qfmt) {
		return res, public(fmt.Errorf("%w: qemu-img opened the image as %q, not %q", ErrNotADisk, info.Format, qfmt), "not a disk image: it reads as %.32q, not %q", info.Format, qfmt)
	}
	res.SourceFormat, res.VirtualSize = format, info.VirtualSize
	if req.Size > 0 && info.VirtualSize > req.Size {
		return res, public(fmt.Errorf("%w: image virtual size %d bytes, requested %d", ErrTooSmall, info.VirtualSize, req.Size), "the requested size (%d bytes) is smaller than the image's virtual size (%d bytes)", req.Size, info.VirtualSize)
	}
	err = im.commit(req.Target, func(tmp string) error {
		if err := im.opts.QemuImg.Convert(ctx, src, qfmt, tmp); err != nil {
			return err
		}
		if req.Size > info.VirtualSize {
			return im.opts.QemuImg.Resize(ctx, tmp, req.Size)
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	st, err := os.Stat(req.Target)
	if err != nil {
		return res, err
	}
	res.Size = st.Size()
	return res, nil
}

// commit writes the target through a temporary name in its directory and
// renames it into place only when write succeeded.
func (im *Importer) commit(target string, write func(tmp string) error) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	tmp := target + ".importing"
	_ = os.Remove(tmp)
	if err := write(tmp); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, target); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// decompress writes src, compressed with f, to dst, and stops with
// ErrTooLarge as soon as more than limit bytes came out.
func (im *Importer) decompress(ctx context.Context, src string, f Format, dst string, limit int64) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	var r io.Reader
	switch f {
	case FormatGzip:
		zr, err := gzip.NewReader(in)
		if err != nil {
			return fmt.Errorf("%w: gzip: %w", ErrNotADisk, err)
		}
		defer zr.Close()
		r = zr
	case FormatXz:
		zr, err := xz.NewReader(in)
		if err != nil {
			return fmt.Errorf("%w: xz: %w", ErrNotADisk, err)
		}
		r = zr
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer out.Close()
	lr := &io.LimitedReader{R: &ctxReader{ctx: ctx, r: r}, N: limit + 1}
	n, err := oci.SparseCopy(out, lr, nil)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %s: %w", ErrNotADisk, f, err)
	}
	if n > limit {
		return public(fmt.Errorf("%w: decompressed source exceeds %d bytes", ErrTooLarge, limit), "the decompressed source is larger than the %d bytes the requested size allows", limit)
	}
	if err := out.Truncate(n); err != nil {
		return err
	}
	return out.Close()
}

func readHeader(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	hdr := make([]byte, 4096)
	n, err := io.ReadFull(f, hdr)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return hdr[:n], nil
}
