package importer_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cdi/importer"
)

// uploadReady stores an upload DataVolume as the DataVolume controller
// leaves it: UploadReady on node n1.
func (e *workerEnv) uploadReady(t *testing.T, name string) {
	t.Helper()
	dv := &virtkit.DataVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Annotations: map[string]string{virtkit.DataVolumeImportNodeAnnotation: "n1"}},
		Spec: virtkit.DataVolumeSpec{Source: &virtkit.DataVolumeImportSource{Upload: &virtkit.DataVolumeSourceUpload{}},
			Storage: &virtkit.PersistentVolumeClaimSpec{Resources: virtkit.VolumeResourceRequirements{
				Requests: virtkit.ResourceList{virtkit.ResourceStorage: resource.MustParse("8Mi")}}}},
	}
	require.NoError(t, e.st.Create(context.Background(), dv))
	dv.Status.Phase = virtkit.DataVolumeUploadReady
	require.NoError(t, e.st.UpdateStatus(context.Background(), dv))
}

func TestWorkerUpload(t *testing.T) {
	dir, marker := fixtures(t)
	ctx := context.Background()
	for _, f := range []string{"disk.qcow2", "disk.raw.gz", "disk.qcow2.xz"} {
		t.Run(f, func(t *testing.T) {
			e := newWorkerEnv(t, 1)
			e.uploadReady(t, "up")
			data, err := os.ReadFile(filepath.Join(dir, f))
			require.NoError(t, err)
			finish, err := e.w.ReceiveUpload(ctx, "ns", "up", bytes.NewReader(data))
			require.NoError(t, err)
			_, err = e.w.ReceiveUpload(ctx, "ns", "up", bytes.NewReader(data))
			require.ErrorIs(t, err, importer.ErrUploadInProgress, "one upload at a time")
			require.NoError(t, finish(ctx))
			dv := e.get(t, "up")
			assert.Equal(t, virtkit.DataVolumeSucceeded, dv.Status.Phase)
			assert.Equal(t, "n1", dv.Annotations[virtkit.DataVolumeVolumeNodeAnnotation])
			disk, err := os.ReadFile(filepath.Join(e.local, "dv", "ns", "up.img"))
			require.NoError(t, err)
			assert.Len(t, disk, 8<<20)
			assert.Equal(t, marker, disk[1<<20:1<<20+len(marker)])
			_, err = e.w.ReceiveUpload(ctx, "ns", "up", bytes.NewReader(data))
			require.ErrorIs(t, err, importer.ErrNotUploadReady, "a succeeded volume takes no more uploads")
		})
	}
}

func TestWorkerUploadRefused(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		body []byte
		want error
	}{
		{"text", []byte("<html>not found</html>\n"), importer.ErrNotADisk},
		{"empty", nil, importer.ErrNotADisk},
		{"larger than the size allows", make([]byte, 8<<20+8<<20/32+4<<20+1), importer.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newWorkerEnv(t, 1)
			e.uploadReady(t, "up")
			_, err := e.w.ReceiveUpload(ctx, "ns", "up", bytes.NewReader(tt.body))
			require.ErrorIs(t, err, tt.want)
			dv := e.get(t, "up")
			assert.Equal(t, virtkit.DataVolumeUploadReady, dv.Status.Phase, "ready for another upload")
			assert.True(t, strings.HasPrefix(dv.Status.Condition(virtkit.DataVolumeRunning).Message, "the last upload failed: "))
			entries, _ := os.ReadDir(e.scratch)
			assert.Empty(t, entries, "the scratch space is removed")
		})
	}
	e := newWorkerEnv(t, 1)
	_, err := e.w.ReceiveUpload(ctx, "ns", "missing", strings.NewReader("x"))
	require.ErrorIs(t, err, importer.ErrNotUploadReady)
	e.scheduled(t, "http", "http://127.0.0.1:1/disk.img")
	_, err = e.w.ReceiveUpload(ctx, "ns", "http", strings.NewReader("x"))
	require.ErrorIs(t, err, importer.ErrNotUploadReady, "an import takes no upload")
}
