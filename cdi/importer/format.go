package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// Format is what a source file holds.
type Format string

// Formats the importer detects.
const (
	FormatRaw   Format = "raw"
	FormatQcow2 Format = "qcow2"
	FormatISO   Format = "iso"
	FormatGzip  Format = "gz"
	FormatXz    Format = "xz"
)

// headerLen is how much of a file Detect needs (the ISO 9660 descriptor
// sits at 32 KiB).
const headerLen = 0x8001 + 5

// Detect reads the format from a file's first bytes (up to 32 KiB + 6).
func Detect(hdr []byte) Format {
	switch {
	case bytes.HasPrefix(hdr, []byte("QFI\xfb")):
		return FormatQcow2
	case bytes.HasPrefix(hdr, []byte{0x1f, 0x8b}):
		return FormatGzip
	case bytes.HasPrefix(hdr, []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}):
		return FormatXz
	case len(hdr) >= 0x8001+5 && string(hdr[0x8001:0x8001+5]) == "CD001":
		return FormatISO
	}
	return FormatRaw
}

// DetectFile detects the format of the file at p.
func DetectFile(p string) (Format, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	hdr := make([]byte, headerLen)
	n, err := io.ReadFull(f, hdr)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", err
	}
	return Detect(hdr[:n]), nil
}

// looksLikeText reports whether a raw "disk" is really a text document (an
// HTML error page, a JSON reply): only printable ASCII and whitespace in its
// first 4 KiB, or an HTML/XML/JSON opening.
func looksLikeText(hdr []byte) bool {
	h := hdr[:min(len(hdr), 4096)]
	t := bytes.TrimSpace(h)
	for _, p := range []string{"<!DOCTYPE", "<!doctype", "<html", "<HTML", "<?xml", "{\"", "404 "} {
		if bytes.HasPrefix(t, []byte(p)) {
			return true
		}
	}
	if len(h) == 0 {
		return false
	}
	for _, c := range h {
		if c == 0 || c > 0x7e || (c < 0x20 && c != '\n' && c != '\r' && c != '\t') {
			return false
		}
	}
	return true
}

// ImageInfo is what qemu-img says about an image.
type ImageInfo struct {
	Format      string `json:"format"`
	VirtualSize int64  `json:"virtual-size"`
	ActualSize  int64  `json:"actual-size"`
	BackingFile string `json:"backing-filename"`
	// FullBackingFile, FormatSpecific.Data.DataFile and Children name
	// what the image refers to outside itself (Children: QEMU 8 and
	// later).
	FullBackingFile string `json:"full-backing-filename"`
	FormatSpecific  struct {
		Data struct {
			DataFile string `json:"data-file"`
		} `json:"data"`
	} `json:"format-specific"`
	Children []struct {
		Name string `json:"name"`
	} `json:"children"`
}

// QemuImg runs qemu-img, confined to the files of each call (see Sandbox).
type QemuImg struct {
	// Path of the binary; empty is "qemu-img" on PATH.
	Path string
	// Sandbox confines qemu-img; the zero value (SandboxAuto) uses
	// bubblewrap when bwrap is found (see Confinement).
	Sandbox Sandbox
	// Bwrap is the bubblewrap binary; empty is "bwrap" on PATH.
	Bwrap string
}

func (q QemuImg) bin() string {
	if q.Path == "" {
		return "qemu-img"
	}
	return q.Path
}

func (q QemuImg) run(ctx context.Context, m mounts, args ...string) ([]byte, error) {
	cmd, err := q.command(ctx, m, args...)
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuffer{b: &stderr, max: 4096}
	out, err := cmd.Output()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		msg := bytes.TrimSpace(stderr.Bytes())
		if bytes.HasPrefix(msg, []byte("bwrap: ")) {
			// The sandbox itself failed to set up (no namespaces here?).
			return nil, fmt.Errorf("qemu-img %s: %w: %w: %s", args[0], ErrNoSandbox, err, msg)
		}
		return nil, fmt.Errorf("qemu-img %s: %w: %s", args[0], err, msg)
	}
	return out, nil
}

// Info runs qemu-img info on p read as format f (the file protocol only,
// no backing file opened).
func (q QemuImg) Info(ctx context.Context, p string, f Format) (ImageInfo, error) {
	out, err := q.run(ctx, mounts{ro: []string{p}}, "info", "--output=json", imageSpec(p, f))
	if err != nil {
		return ImageInfo{}, err
	}
	var info ImageInfo
	if err := json.Unmarshal(out, &info); err != nil {
		return ImageInfo{}, fmt.Errorf("qemu-img info: %w", err)
	}
	return info, nil
}

// Convert converts src (format f) to a raw image at dst. src is opened
// with the file protocol only and with no backing file, whatever its
// header names; callers check it has no external data file first
// (checkQcow2Header), as qemu-img has no option that refuses one; confined
// (Sandbox), qemu-img can open src and dst only.
func (q QemuImg) Convert(ctx context.Context, src string, f Format, dst string) error {
	if err := createOutput(dst); err != nil {
		return err
	}
	_, err := q.run(ctx, mounts{ro: []string{src}, rw: []string{dst}}, "convert", "-t", "writeback", "-O", "raw", imageSpec(src, f), dst)
	return err
}

// Resize grows the raw image at p to size bytes.
func (q QemuImg) Resize(ctx context.Context, p string, size int64) error {
	_, err := q.run(ctx, mounts{rw: []string{p}}, "resize", "-f", "raw", p, strconv.FormatInt(size, 10))
	return err
}

type limitedBuffer struct {
	b   *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
