package importer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/events"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// Errors of an upload.
var (
	// ErrNotUploadReady: the DataVolume is not waiting for an upload
	// (phase UploadReady) on this node.
	ErrNotUploadReady = errors.New("the volume is not ready for an upload")
	// ErrUploadInProgress: another upload to the DataVolume is running.
	ErrUploadInProgress = errors.New("an upload to the volume is in progress")
)

// ReceiveUpload takes the data of an upload to DataVolume namespace/name,
// which must be UploadReady on this node: body is written to the
// DataVolume's scratch space, at most SourceLimit of its size (more fails
// with ErrTooLarge). It returns finish, which converts the data (raw,
// qcow2, ISO, gzip or xz compressed, as an import's) into the volume and
// marks the DataVolume Succeeded. A failed upload or conversion leaves the
// DataVolume UploadReady for another upload, with a warning event; its
// error is the one to show the uploader (TenantMessage). Only one upload
// to a DataVolume runs at a time (ErrUploadInProgress); finish must be
// called once ReceiveUpload succeeded.
func (w *Worker) ReceiveUpload(ctx context.Context, namespace, name string, body io.Reader) (finish func(context.Context) error, err error) {
	key := namespace + "/" + name
	if _, busy := w.uploads.LoadOrStore(key, struct{}{}); busy {
		return nil, public(fmt.Errorf("%w: %s", ErrUploadInProgress, key), "an upload to %s is in progress", key)
	}
	release := func() { w.uploads.Delete(key) }
	dv, err := w.uploadTarget(ctx, namespace, name)
	if err != nil {
		release()
		return nil, err
	}
	size, _ := virtkit.DataVolumeSize(&dv.Spec)
	scratch := w.opts.Importer.scratchDir(scratchKey(dv))
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		release()
		return nil, err
	}
	src := filepath.Join(scratch, "upload")
	err = receive(ctx, body, src, w.opts.Importer.SourceLimit(size))
	if err == nil {
		// What is not a disk image fails now, before an async upload is
		// answered.
		err = precheck(src)
	}
	if err != nil {
		_ = os.RemoveAll(scratch)
		release()
		w.uploadFailed(ctx, dv, err)
		return nil, err
	}
	w.log.InfoContext(ctx, "upload received", "datavolume", key)
	return func(ctx context.Context) error {
		defer release()
		return w.finishUpload(ctx, namespace, name, src, size)
	}, nil
}

// uploadTarget is the DataVolume namespace/name when it waits for an
// upload on this node.
func (w *Worker) uploadTarget(ctx context.Context, namespace, name string) (*virtkit.DataVolume, error) {
	dv := &virtkit.DataVolume{}
	if err := w.opts.Store.Get(ctx, store.Key{Namespace: namespace, Name: name}, dv); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, public(fmt.Errorf("%w: %s/%s: %w", ErrNotUploadReady, namespace, name, err), "datavolume %s/%s not found", namespace, name)
		}
		return nil, err
	}
	switch {
	case dv.DeletionTimestamp != nil, dv.Spec.Source == nil, dv.Spec.Source.Upload == nil:
		return nil, public(fmt.Errorf("%w: %s/%s has no upload source", ErrNotUploadReady, namespace, name), "datavolume %s/%s does not take uploads", namespace, name)
	case dv.Status.Phase != virtkit.DataVolumeUploadReady:
		return nil, public(fmt.Errorf("%w: %s/%s is in phase %q", ErrNotUploadReady, namespace, name, dv.Status.Phase),
			"datavolume %s/%s is in phase %q, not UploadReady", namespace, name, dv.Status.Phase)
	case dv.Annotations[virtkit.DataVolumeImportNodeAnnotation] != w.opts.NodeName:
		return nil, fmt.Errorf("%w: %s/%s is not on node %s", ErrNotUploadReady, namespace, name, w.opts.NodeName)
	}
	return dv, nil
}

// receive copies body to dst, at most limit bytes.
func receive(ctx context.Context, body io.Reader, dst string, limit int64) error {
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.Copy(f, &io.LimitedReader{R: &ctxReader{ctx: ctx, r: body}, N: limit + 1})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return public(fmt.Errorf("upload interrupted after %d bytes: %w", n, err), "the upload was interrupted after %d bytes", n)
	}
	if n > limit {
		return public(fmt.Errorf("%w: the upload is larger than %d bytes", ErrTooLarge, limit), "the upload is larger than the %d bytes the requested size allows", limit)
	}
	if n == 0 {
		return public(fmt.Errorf("%w: the upload is empty", ErrNotADisk), "not a disk image: the upload is empty")
	}
	return f.Close()
}

func (w *Worker) finishUpload(ctx context.Context, namespace, name, src string, size int64) error {
	dv, err := w.uploadTarget(ctx, namespace, name)
	if err != nil {
		return err
	}
	class, err := w.opts.Classes.ForDataVolume(&dv.Spec)
	if err != nil {
		return err
	}
	res, err := w.opts.Importer.Import(ctx, Request{File: src, Target: class.Path(w.opts.NodeName, namespace, name), Size: size, Key: scratchKey(dv)})
	if err != nil {
		_ = w.opts.Importer.RemoveScratch(scratchKey(dv))
		w.uploadFailed(ctx, dv, err)
		return err
	}
	return w.succeed(ctx, reconcile.Request{Namespace: namespace, Name: name}, class, res)
}

// precheck refuses an upload that is empty or text (an error page, a
// wrong file); the rest is checked by the conversion.
func precheck(src string) error {
	format, err := DetectFile(src)
	if err != nil {
		return err
	}
	if format != FormatRaw {
		return nil
	}
	hdr, err := readHeader(src)
	if err != nil {
		return err
	}
	if looksLikeText(hdr) {
		return public(fmt.Errorf("%w: the upload is text", ErrNotADisk), "not a disk image: the upload is text")
	}
	return nil
}

// uploadFailed records a failed upload in the DataVolume's Running
// condition and an event; the DataVolume stays UploadReady.
func (w *Worker) uploadFailed(ctx context.Context, dv *virtkit.DataVolume, cause error) {
	w.log.WarnContext(ctx, "upload failed", "datavolume", dv.Namespace+"/"+dv.Name, "err", cause)
	if ctx.Err() == nil {
		cur := &virtkit.DataVolume{}
		if err := w.opts.Store.Get(ctx, store.Key{Namespace: dv.Namespace, Name: dv.Name}, cur); err == nil && cur.Status.Phase == virtkit.DataVolumeUploadReady {
			cur.Status.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeRunning, Status: virtkit.ConditionTrue,
				Reason: virtkit.DataVolumeReasonError, Message: "the last upload failed: " + TenantMessage(cause)}, w.now())
			if err := w.opts.Store.UpdateStatus(ctx, cur); err != nil {
				w.log.WarnContext(ctx, "recording a failed upload", "datavolume", dv.Namespace+"/"+dv.Name, "err", err)
			}
		}
		events.RecordEvent(ctx, w.opts.Events, dv, virtkit.EventTypeWarning, virtkit.DataVolumeReasonError, "Upload", "Upload failed: %s", TenantMessage(cause))
	}
}
