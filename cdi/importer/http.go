package importer

import (
	"context"
	"crypto/md5" //nolint:gosec // md5 only checks a checksum the user gave
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// HTTPSource is an http(s) image.
type HTTPSource struct {
	URL string
	// Headers are "Name: value" lines sent with every request.
	Headers []string
	// Checksum is "algorithm:hex" (md5, sha1, sha256, sha512); empty
	// skips the check.
	Checksum string
}

// download fetches src into dst. A partial dst from an earlier attempt is
// resumed with a Range request when the server supports it; a reply
// without range support starts over. At most limit bytes are accepted: a
// larger declared length is refused before the body is read.
func (im *Importer) download(ctx context.Context, src HTTPSource, dst string, limit int64, progress func(done, total int64)) error {
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	have, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	// A stalled server must not hold the import forever: every byte
	// received pushes the deadline back by IdleTimeout.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(im.opts.IdleTimeout, func() { cancel(errIdle) })
	defer idle.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src.URL, nil)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadSource, err)
	}
	if err := im.policy.CheckURL(req.URL); err != nil {
		return fmt.Errorf("%w: GET %s: %w", ErrBadSource, src.URL, err)
	}
	for _, h := range src.Headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	if have > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(have, 10)+"-")
	}
	resp, err := im.client.Do(req)
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, errIdle) {
			return fmt.Errorf("%w: GET %s: %w", ErrUnreachable, src.URL, cause)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, ErrAddressNotAllowed) {
			return fmt.Errorf("%w: %w", ErrBadSource, err)
		}
		return fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	defer resp.Body.Close()
	var total int64 = -1
	switch {
	case resp.StatusCode == http.StatusPartialContent && have > 0:
		start, size, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start != have {
			return public(fmt.Errorf("server answered range %q to a request from byte %d", resp.Header.Get("Content-Range"), have), "the server answered a resumed download with the wrong range (retried)")
		}
		total = size
		im.log.Debug("resuming download", "url", src.URL, "from", have)
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && have > 0:
		// The partial file may already be complete; the checksum and the
		// format checks decide.
		if _, size, ok := parseContentRange(resp.Header.Get("Content-Range")); ok && size == have {
			return nil
		}
		if err := f.Truncate(0); err != nil {
			return err
		}
		return public(fmt.Errorf("server refused to resume at byte %d: starting over", have), "the server refused to resume at byte %d: starting over", have)
	case resp.StatusCode == http.StatusOK:
		if have > 0 {
			if err := f.Truncate(0); err != nil {
				return err
			}
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return err
			}
			have = 0
		}
		total = resp.ContentLength
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusRequestTimeout:
		return public(fmt.Errorf("%w: GET %s: %s", ErrBadSource, src.URL, resp.Status), "the server answered %s", resp.Status)
	default:
		return public(fmt.Errorf("GET %s: %s", src.URL, resp.Status), "the server answered %s (retried)", resp.Status)
	}
	if total > limit {
		return public(fmt.Errorf("%w: %s is %d bytes, limit %d", ErrTooLarge, src.URL, total, limit), "the source is %d bytes, more than the %d the requested size allows", total, limit)
	}
	done := have
	buf := make([]byte, 256<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			idle.Reset(im.opts.IdleTimeout)
			if done+int64(n) > limit {
				return public(fmt.Errorf("%w: %s is larger than %d bytes", ErrTooLarge, src.URL, limit), "the source is larger than the %d bytes the requested size allows", limit)
			}
			if _, err := f.Write(buf[:n]); err != nil {
				return err
			}
			done += int64(n)
			if progress != nil {
				progress(done, total)
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			if cause := context.Cause(ctx); errors.Is(cause, errIdle) {
				return public(fmt.Errorf("GET %s: stalled after %d bytes: %w", src.URL, done, cause), "the download stalled after %d bytes (retried)", done)
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return public(fmt.Errorf("GET %s: interrupted after %d bytes: %w", src.URL, done, rerr), "the download was interrupted after %d bytes (retried)", done)
		}
	}
	if total >= 0 && done != total {
		return public(fmt.Errorf("GET %s: got %d of %d bytes", src.URL, done, total), "the download ended after %d of %d bytes (retried)", done, total)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}

// errIdle: the server sent nothing for IdleTimeout.
var errIdle = errors.New("no data received within the idle timeout")

// parseContentRange reads "bytes start-end/size".
func parseContentRange(v string) (start, size int64, ok bool) {
	v, found := strings.CutPrefix(v, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, sz, found := strings.Cut(v, "/")
	if !found {
		return 0, 0, false
	}
	size, err := strconv.ParseInt(sz, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	if rng == "*" {
		return 0, size, true
	}
	s, _, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	start, err = strconv.ParseInt(s, 10, 64)
	return start, size, err == nil
}

// verifyChecksum checks the file at p against "algorithm:hex".
func verifyChecksum(ctx context.Context, p, checksum string) error {
	alg, want, ok := strings.Cut(checksum, ":")
	if !ok {
		return public(fmt.Errorf("%w: checksum %q: want algorithm:hex", ErrBadSource, checksum), "checksum %.128q: want algorithm:hex", checksum)
	}
	var h hash.Hash
	switch strings.ToLower(alg) {
	case "md5":
		h = md5.New() //nolint:gosec
	case "sha1":
		h = sha1.New() //nolint:gosec
	case "sha256":
		h = sha256.New()
	case "sha512":
		h = sha512.New()
	default:
		return public(fmt.Errorf("%w: checksum algorithm %q not supported", ErrBadSource, alg), "checksum algorithm %.32q not supported (md5, sha1, sha256, sha512)", alg)
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.Copy(h, &ctxReader{ctx: ctx, r: f}); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, want) {
		err := fmt.Errorf("%w: %s checksum is %s, want %s", ErrChecksum, alg, got, want)
		return public(err, "%s checksum of the download is %s, want %.128s", alg, got, want)
	}
	return nil
}

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
