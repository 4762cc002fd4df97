package importer

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Source is an object in an S3-compatible store, named by a path-style
// URL: http(s)://host[:port]/bucket/key.
type S3Source struct {
	// URL is http(s)://host[:port]/bucket/key.
	URL string
	// AccessKeyID and SecretKey sign the requests (AWS Signature
	// Version 4); both empty is an anonymous request.
	AccessKeyID, SecretKey string
	// RootCAs verify an https endpoint; nil is the system's pool.
	RootCAs *x509.CertPool
	// Region signs the requests; empty is us-east-1.
	Region string
}

// ParseS3URL splits an S3 URL, http(s)://host[:port]/bucket/key, into the
// endpoint (host[:port]), whether it is https, the bucket and the object
// key.
func ParseS3URL(raw string) (endpoint string, secure bool, bucket, key string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", false, "", "", fmt.Errorf("%w: s3 url: %w", ErrBadSource, err)
	}
	switch u.Scheme {
	case "https":
		secure = true
	case "http":
	default:
		return "", false, "", "", fmt.Errorf("%w: s3 url %q: want http:// or https://", ErrBadSource, raw)
	}
	if u.Host == "" {
		return "", false, "", "", fmt.Errorf("%w: s3 url %q: no host", ErrBadSource, raw)
	}
	bucket, key, _ = strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if bucket == "" || key == "" {
		return "", false, "", "", fmt.Errorf("%w: s3 url %q: want http(s)://host/bucket/key", ErrBadSource, raw)
	}
	return u.Host, secure, bucket, key, nil
}

// downloadS3 fetches an S3 object into dst, at most limit bytes. A partial
// dst from an earlier attempt is resumed from where it stopped.
func (im *Importer) downloadS3(ctx context.Context, src S3Source, dst string, limit int64, progress func(done, total int64)) error {
	endpoint, secure, bucket, key, err := ParseS3URL(src.URL)
	if err != nil {
		return public(err, "%s", err.Error())
	}
	u := &url.URL{Scheme: "http", Host: endpoint}
	if secure {
		u.Scheme = "https"
	}
	if err := im.policy.CheckURL(u); err != nil {
		return fmt.Errorf("%w: s3 %s: %w", ErrBadSource, endpoint, err)
	}
	t := im.policy.Transport(nil)
	t.ResponseHeaderTimeout = 30 * time.Second
	if src.RootCAs != nil {
		t.TLSClientConfig = &tls.Config{RootCAs: src.RootCAs, MinVersion: tls.VersionTLS12}
	}
	region := src.Region
	if region == "" {
		region = "us-east-1" // known: no GetBucketLocation round trip
	}
	opts := &minio.Options{Secure: secure, Transport: t, Region: region, BucketLookup: minio.BucketLookupPath, MaxRetries: 1}
	if src.AccessKeyID != "" || src.SecretKey != "" {
		opts.Creds = credentials.NewStaticV4(src.AccessKeyID, src.SecretKey, "")
	}
	client, err := minio.New(endpoint, opts)
	if err != nil {
		return public(fmt.Errorf("%w: s3 client: %w", ErrBadSource, err), "s3: %s", err.Error())
	}

	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	have, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(im.opts.IdleTimeout, func() { cancel(errIdle) })
	defer idle.Stop()

	info, err := client.StatObject(ctx, bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return im.s3Error(ctx, err, bucket, key)
	}
	total := info.Size
	if total > limit {
		return public(fmt.Errorf("%w: s3 object %s/%s is %d bytes, limit %d", ErrTooLarge, bucket, key, total, limit),
			"the source is %d bytes, more than the %d the requested size allows", total, limit)
	}
	if have > total {
		if err := f.Truncate(0); err != nil {
			return err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		have = 0
	}
	if have == total {
		return f.Close()
	}
	gopts := minio.GetObjectOptions{}
	if have > 0 {
		if err := gopts.SetRange(have, 0); err != nil {
			return err
		}
		// The object must not have changed since the partial download.
		if err := gopts.SetMatchETag(info.ETag); err != nil {
			return err
		}
		im.log.Debug("resuming s3 download", "bucket", bucket, "key", key, "from", have)
	}
	obj, err := client.GetObject(ctx, bucket, key, gopts)
	if err != nil {
		return im.s3Error(ctx, err, bucket, key)
	}
	restart := func(err error) error {
		if minio.ToErrorResponse(err).StatusCode == http.StatusPreconditionFailed {
			_ = f.Truncate(0) // the object changed: the next attempt starts over
		}
		return im.s3Error(ctx, err, bucket, key)
	}
	defer obj.Close()
	done := have
	buf := make([]byte, 256<<10)
	for {
		n, rerr := obj.Read(buf)
		if n > 0 {
			idle.Reset(im.opts.IdleTimeout)
			if done+int64(n) > limit {
				return public(fmt.Errorf("%w: s3 object %s/%s is larger than %d bytes", ErrTooLarge, bucket, key, limit),
					"the source is larger than the %d bytes the requested size allows", limit)
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
			return restart(rerr)
		}
	}
	if done != total {
		return public(fmt.Errorf("s3 %s/%s: got %d of %d bytes", bucket, key, done, total), "the download ended after %d of %d bytes (retried)", done, total)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}

// s3Error classifies an S3 error: access, missing bucket or object and
// other 4xx answers are the source's fault; the rest is retried.
func (im *Importer) s3Error(ctx context.Context, err error, bucket, key string) error {
	if cause := context.Cause(ctx); errors.Is(cause, errIdle) {
		return public(fmt.Errorf("%w: s3 %s/%s: %w", ErrUnreachable, bucket, key, cause), "the download stalled (retried)")
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, ErrAddressNotAllowed) {
		return fmt.Errorf("%w: %w", ErrBadSource, err)
	}
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.StatusCode == http.StatusPreconditionFailed:
		return public(fmt.Errorf("s3 %s/%s changed during the download: %w", bucket, key, err), "the object changed during the download: starting over (retried)")
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusRequestTimeout:
		code := resp.Code
		if code == "" {
			code = http.StatusText(resp.StatusCode)
		}
		return public(fmt.Errorf("%w: s3 %s/%s: %s: %w", ErrBadSource, bucket, key, code, err), "the s3 server answered %d %.64s for %s/%s", resp.StatusCode, code, bucket, key)
	case resp.StatusCode != 0:
		return public(fmt.Errorf("s3 %s/%s: %w", bucket, key, err), "the s3 server answered %d (retried)", resp.StatusCode)
	}
	return public(fmt.Errorf("%w: s3 %s/%s: %w", ErrUnreachable, bucket, key, err), "the s3 server could not be reached (retried)")
}
