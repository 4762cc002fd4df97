//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package cloudimage_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/virtkit/virtkit/guestagent"
)

// guest runs commands and reads files in a guest through its agent
// (guest-exec, guest-file-*), with guest replies bounded.
type guest struct {
	c *guestagent.Client
}

// maxGuestFile bounds what readFile returns.
const maxGuestFile = 4 << 20

type execResult struct {
	Code           int
	Stdout, Stderr string
}

// exec runs path with args in the guest and waits for it to exit.
func (g guest) exec(ctx context.Context, path string, args ...string) (execResult, error) {
	var started struct {
		PID int `json:"pid"`
	}
	if err := g.c.Execute(ctx, "guest-exec", map[string]any{
		"path": path, "arg": args, "capture-output": true,
	}, &started); err != nil {
		return execResult{}, err
	}
	for {
		var st struct {
			Exited   bool   `json:"exited"`
			ExitCode int    `json:"exitcode"`
			Signal   int    `json:"signal"`
			Out      string `json:"out-data"`
			Err      string `json:"err-data"`
		}
		if err := g.c.Execute(ctx, "guest-exec-status", map[string]any{"pid": started.PID}, &st); err != nil {
			return execResult{}, err
		}
		if st.Exited {
			out, err1 := base64.StdEncoding.DecodeString(st.Out)
			serr, err2 := base64.StdEncoding.DecodeString(st.Err)
			if err := errors.Join(err1, err2); err != nil {
				return execResult{}, fmt.Errorf("guest-exec-status of %s: %w", path, err)
			}
			code := st.ExitCode
			if st.Signal != 0 {
				code = 128 + st.Signal
			}
			return execResult{Code: code, Stdout: string(out), Stderr: string(serr)}, nil
		}
		select {
		case <-ctx.Done():
			return execResult{}, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// readFile reads a whole guest file (up to maxGuestFile bytes).
func (g guest) readFile(ctx context.Context, path string) ([]byte, error) {
	var handle int
	if err := g.c.Execute(ctx, "guest-file-open", map[string]any{"path": path, "mode": "r"}, &handle); err != nil {
		return nil, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = g.c.Execute(cctx, "guest-file-close", map[string]any{"handle": handle}, nil)
	}()
	var data []byte
	for {
		var chunk struct {
			Count int    `json:"count"`
			Buf   string `json:"buf-b64"`
			EOF   bool   `json:"eof"`
		}
		if err := g.c.Execute(ctx, "guest-file-read", map[string]any{"handle": handle, "count": 256 << 10}, &chunk); err != nil {
			return nil, err
		}
		b, err := base64.StdEncoding.DecodeString(chunk.Buf)
		if err != nil {
			return nil, fmt.Errorf("guest-file-read %s: %w", path, err)
		}
		data = append(data, b...)
		if len(data) > maxGuestFile {
			return nil, fmt.Errorf("guest file %s: larger than %d bytes", path, maxGuestFile)
		}
		if chunk.EOF || chunk.Count == 0 {
			return data, nil
		}
	}
}
