package importer_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cdi/importer"
	"github.com/virtkit/virtkit/cdi/storage"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

type workerEnv struct {
	st      store.Store
	scratch string
	w       *importer.Worker
	local   string
	shared  string
}

func newWorkerEnv(t *testing.T, retries int32) *workerEnv {
	t.Helper()
	e := &workerEnv{st: store.NewMemory(), scratch: t.TempDir(), local: t.TempDir(), shared: t.TempDir()}
	im, err := importer.New(importer.Options{ScratchDir: e.scratch, AllowedNetworks: loopback})
	require.NoError(t, err)
	e.w, err = importer.NewWorker(importer.WorkerOptions{NodeName: "n1", Store: e.st, Importer: im, MaxRetries: retries,
		Backoff: func(int32) time.Duration { return time.Millisecond }, ProgressInterval: 20 * time.Millisecond,
		Classes: storage.Classes{List: []storage.Class{
			storage.Local{Dir: func(string) string { return e.local }},
			storage.SharedDir{Dir: e.shared},
		}}})
	require.NoError(t, err)
	return e
}

// scheduled stores a DataVolume as the DataVolume controller leaves it.
func (e *workerEnv) scheduled(t *testing.T, name, url string, modes ...virtkit.PersistentVolumeAccessMode) {
	t.Helper()
	dv := &virtkit.DataVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Annotations: map[string]string{virtkit.DataVolumeImportNodeAnnotation: "n1"}},
		Spec: virtkit.DataVolumeSpec{Source: &virtkit.DataVolumeImportSource{HTTP: &virtkit.DataVolumeSourceHTTP{URL: url}},
			Storage: &virtkit.PersistentVolumeClaimSpec{AccessModes: modes, Resources: virtkit.VolumeResourceRequirements{
				Requests: virtkit.ResourceList{virtkit.ResourceStorage: resource.MustParse("8Mi")}}}},
	}
	require.NoError(t, e.st.Create(context.Background(), dv))
	dv.Status.Phase = virtkit.DataVolumeImportScheduled
	require.NoError(t, e.st.UpdateStatus(context.Background(), dv))
}

func (e *workerEnv) get(t *testing.T, name string) *virtkit.DataVolume {
	t.Helper()
	dv := &virtkit.DataVolume{}
	require.NoError(t, e.st.Get(context.Background(), store.Key{Namespace: "ns", Name: name}, dv))
	return dv
}

// A transient failure (unreachable server) is retried with back-off,
// counting status.restartCount, until the last attempt fails the
// DataVolume with the cause.
func TestWorkerRetriesThenFails(t *testing.T) {
	e := newWorkerEnv(t, 3)
	closed := httptest.NewServer(http.NotFoundHandler())
	url := closed.URL + "/disk.img"
	closed.Close()
	e.scheduled(t, "dv", url)
	req := reconcile.Request{Namespace: "ns", Name: "dv"}
	for want := int32(1); want <= 2; want++ {
		res, err := e.w.Reconcile(context.Background(), req)
		require.NoError(t, err)
		assert.Equal(t, time.Millisecond, res.RequeueAfter)
		dv := e.get(t, "dv")
		assert.Equal(t, want, dv.Status.RestartCount)
		assert.Equal(t, virtkit.DataVolumeImportInProgress, dv.Status.Phase)
		running := dv.Status.Condition(virtkit.DataVolumeRunning)
		assert.Equal(t, virtkit.DataVolumeReasonError, running.Reason)
		assert.Contains(t, running.Message, "unreachable")
	}
	res, err := e.w.Reconcile(context.Background(), req)
	require.NoError(t, err)
	assert.Zero(t, res.RequeueAfter)
	dv := e.get(t, "dv")
	assert.Equal(t, virtkit.DataVolumeFailed, dv.Status.Phase)
	assert.Equal(t, virtkit.DataVolumeReasonTransferFailed, dv.Status.Condition(virtkit.DataVolumeReady).Reason)
}

// A permanent failure (404) fails at once, without a retry.
func TestWorkerFailsBadSourceAtOnce(t *testing.T) {
	e := newWorkerEnv(t, 5)
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	e.scheduled(t, "dv", srv.URL+"/disk.img")
	_, err := e.w.Reconcile(context.Background(), reconcile.Request{Namespace: "ns", Name: "dv"})
	require.NoError(t, err)
	dv := e.get(t, "dv")
	assert.Equal(t, virtkit.DataVolumeFailed, dv.Status.Phase)
	assert.Zero(t, dv.Status.RestartCount)
	assert.Contains(t, dv.Status.Condition(virtkit.DataVolumeRunning).Message, "404")
}

// status.progress moves while a slow download runs; the finished volume is
// Succeeded at 100.00%, on this node (local class) or on none (shared
// class, ReadWriteMany); deleting the DataVolume removes the disk.
func TestWorkerProgressAndClasses(t *testing.T) {
	dir, _ := fixtures(t)
	raw, err := os.ReadFile(filepath.Join(dir, "disk.raw"))
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "4194304")
		for off := 0; off < len(raw); off += len(raw) / 10 {
			_, _ = w.Write(raw[off:min(off+len(raw)/10, len(raw))])
			w.(http.Flusher).Flush()
			time.Sleep(60 * time.Millisecond)
		}
	}))
	defer srv.Close()
	e := newWorkerEnv(t, 3)
	e.scheduled(t, "local", srv.URL+"/disk.raw")
	e.scheduled(t, "rwx", srv.URL+"/disk.raw", virtkit.ReadWriteMany)

	done := make(chan error, 1)
	go func() {
		_, err := e.w.Reconcile(context.Background(), reconcile.Request{Namespace: "ns", Name: "local"})
		done <- err
	}()
	partial := regexp.MustCompile(`^[1-9][0-9]?\.[0-9]{2}%$`)
	seen := map[virtkit.DataVolumeProgress]bool{}
	for finished := false; !finished; {
		select {
		case err := <-done:
			require.NoError(t, err)
			finished = true
		case <-time.After(5 * time.Millisecond):
			seen[e.get(t, "local").Status.Progress] = true
		}
	}
	var partials []virtkit.DataVolumeProgress
	for p := range seen {
		if partial.MatchString(string(p)) {
			partials = append(partials, p)
		}
	}
	assert.NotEmpty(t, partials, "progress seen: %v", seen)
	dv := e.get(t, "local")
	assert.Equal(t, virtkit.DataVolumeSucceeded, dv.Status.Phase)
	assert.Equal(t, virtkit.DataVolumeProgress("100.00%"), dv.Status.Progress)
	assert.Equal(t, "n1", dv.Annotations[virtkit.DataVolumeVolumeNodeAnnotation])
	assert.Equal(t, storage.LocalClass, dv.Annotations[virtkit.DataVolumeStorageClassAnnotation])
	assert.FileExists(t, filepath.Join(e.local, "dv", "ns", "local.img"))

	_, err = e.w.Reconcile(context.Background(), reconcile.Request{Namespace: "ns", Name: "rwx"})
	require.NoError(t, err)
	dv = e.get(t, "rwx")
	assert.Equal(t, virtkit.DataVolumeSucceeded, dv.Status.Phase)
	assert.NotContains(t, dv.Annotations, virtkit.DataVolumeVolumeNodeAnnotation, "a shared volume pins no node")
	assert.Equal(t, storage.SharedClass, dv.Annotations[virtkit.DataVolumeStorageClassAnnotation])
	assert.FileExists(t, filepath.Join(e.shared, "dv", "ns", "rwx.img"))

	require.NoError(t, e.st.Delete(context.Background(), dv, store.DeleteOptions{}))
	_, err = e.w.Reconcile(context.Background(), reconcile.Request{Namespace: "ns", Name: "rwx"})
	require.NoError(t, err)
	assert.NoFileExists(t, filepath.Join(e.shared, "dv", "ns", "rwx.img"))
}

type eventLog struct{ notes []string }

func (l *eventLog) Event(_ context.Context, _ virtkit.Object, _, _, _, note string) {
	l.notes = append(l.notes, note)
}

// An image qemu-img cannot open fails the DataVolume with a reason, while
// qemu-img's own words (which name the node's scratch path) stay in the
// node's log: neither the conditions nor the events carry a host path.
func TestWorkerStatusCarriesNoHostPath(t *testing.T) {
	e := newWorkerEnv(t, 1)
	events := &eventLog{}
	im, err := importer.New(importer.Options{ScratchDir: e.scratch, AllowedNetworks: loopback})
	require.NoError(t, err)
	e.w, err = importer.NewWorker(importer.WorkerOptions{NodeName: "n1", Store: e.st, Importer: im, MaxRetries: 1, Events: events,
		Classes: storage.Classes{List: []storage.Class{storage.Local{Dir: func(string) string { return e.local }}}}})
	require.NoError(t, err)
	// A qcow2 header qemu-img refuses (version 9).
	bad := append([]byte("QFI\xfb\x00\x00\x00\x09"), make([]byte, 4096)...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(bad) }))
	defer srv.Close()
	e.scheduled(t, "dv", srv.URL+"/disk.qcow2")
	_, err = e.w.Reconcile(context.Background(), reconcile.Request{Namespace: "ns", Name: "dv"})
	require.NoError(t, err)
	dv := e.get(t, "dv")
	require.Equal(t, virtkit.DataVolumeFailed, dv.Status.Phase)
	msgs := append([]string{dv.Status.Condition(virtkit.DataVolumeRunning).Message, dv.Status.Condition(virtkit.DataVolumeReady).Message}, events.notes...)
	assert.Contains(t, msgs[0], "not a disk image")
	for _, m := range msgs {
		assert.NotContains(t, m, e.scratch)
		assert.NotContains(t, m, e.local)
		assert.NotContains(t, m, "qemu-img")
	}
}
