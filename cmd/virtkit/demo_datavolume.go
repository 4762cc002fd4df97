package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// demoDiskHost is what demo-libvirt.yaml's DataVolume URL names; the demo
// replaces it with its loopback disk server's address.
const demoDiskHost = "DEMO_DISK_HOST"

// demoDiskRate is how fast the demo's disk server sends (bytes/s), slow
// enough that the import's progress is visible.
const demoDiskRate = 8 << 20

// serveDemoDisk writes a 32 MiB qcow2 with data in it and serves it over
// HTTP on loopback at a bounded rate until stop is called. It returns the
// server's host:port.
func serveDemoDisk(ctx context.Context) (host string, stop func(), err error) {
	qemuImg, err := exec.LookPath("qemu-img")
	if err != nil {
		return "", nil, fmt.Errorf("the demo's DataVolume import needs qemu-img (Debian qemu-utils): %w", err)
	}
	dir, err := os.MkdirTemp("", "virtkit-demo-disk-")
	if err != nil {
		return "", nil, err
	}
	raw, qcow := filepath.Join(dir, "data.raw"), filepath.Join(dir, "tiny-data.qcow2")
	data := make([]byte, 0, 32<<20)
	sum := sha256.Sum256([]byte("virtkit demo disk"))
	for len(data) < cap(data) {
		data = append(data, sum[:]...)
		sum = sha256.Sum256(sum[:])
	}
	if err := os.WriteFile(raw, data, 0o644); err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, err
	}
	if out, err := exec.CommandContext(ctx, qemuImg, "convert", "-f", "raw", "-O", "qcow2", raw, qcow).CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, fmt.Errorf("qemu-img convert: %w: %s", err, strings.TrimSpace(string(out)))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, err
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/tiny-data.qcow2" {
			http.NotFound(w, r)
			return
		}
		f, err := os.Open(qcow)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(st.Size()))
		w.Header().Set("Content-Type", "application/octet-stream")
		_ = throttledCopy(r.Context(), w, f, demoDiskRate)
	})}
	done := make(chan struct{})
	go func() { _ = srv.Serve(l); close(done) }()
	return l.Addr().String(), func() {
		_ = srv.Close()
		<-done
		_ = os.RemoveAll(dir)
	}, nil
}

// throttledCopy copies r to w at about rate bytes per second.
func throttledCopy(ctx context.Context, w io.Writer, r io.Reader, rate int) error {
	chunk := make([]byte, rate/10)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		n, err := r.Read(chunk)
		if n > 0 {
			if _, werr := w.Write(chunk[:n]); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// dataVolumesStep waits for the DataVolumes of a VM's dataVolumeTemplates
// to be imported, printing each change of phase and progress as CDI's
// `kubectl get dv` would show it.
func (w *walk) dataVolumesStep(vm *virtkit.VirtualMachine) error {
	if len(vm.Spec.DataVolumeTemplates) == 0 {
		return nil
	}
	w.title("Import the DataVolumes of %s (dataVolumeTemplates)", store.KeyOf(vm))
	for _, t := range vm.Spec.DataVolumeTemplates {
		key := store.Key{Namespace: vm.Namespace, Name: t.ObjectMeta.Name}
		last := ""
		for {
			dv := &virtkit.DataVolume{}
			err := w.c.Store().Get(w.ctx, key, dv)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if err == nil {
				progress := dv.Status.Progress
				if progress == "" {
					progress = virtkit.ProgressNotAvailable
				}
				line := fmt.Sprintf("datavolume %s  phase %-16s progress %s", key, dv.Status.Phase, progress)
				if line != last {
					fmt.Fprintf(w.out, "  %s\n", line)
					last = line
				}
				switch dv.Status.Phase {
				case virtkit.DataVolumeSucceeded:
					var b strings.Builder
					_ = printTable(&b, virtkit.KindDataVolume, []virtkit.Object{dv}, true, time.Now())
					fmt.Fprint(w.out, "\n"+indent(b.String(), "    "))
				case virtkit.DataVolumeFailed:
					return fmt.Errorf("datavolume %s failed: %+v", key, dv.Status.Conditions)
				}
				if dv.Status.Phase == virtkit.DataVolumeSucceeded {
					break
				}
			}
			select {
			case <-w.ctx.Done():
				return fmt.Errorf("datavolume %s not imported: %w", key, w.ctx.Err())
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}
