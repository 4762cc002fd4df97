package apiserver_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

const exportDataVolume = `apiVersion: cdi.kubevirt.io/v1beta1
kind: DataVolume
metadata:
  name: export-disk
  namespace: default
spec:
  source:
    blank: {}
  storage:
    storageClassName: shared
    resources:
      requests:
        storage: 2Mi
`

const exportManifest = `apiVersion: export.kubevirt.io/v1
kind: VirtualMachineExport
metadata:
  name: export-disk
  namespace: default
spec:
  source:
    apiGroup: ""
    kind: PersistentVolumeClaim
    name: export-disk
  ttlDuration: 1h
`

// TestKubectlVirtualMachineExport creates a VirtualMachineExport of a
// DataVolume's claim with the real kubectl through the API server of a
// running simulated cluster, waits for it to be Ready, reads its links
// and token Secret with kubectl, and downloads the disk raw and gzipped
// over HTTPS, verifying the server with the CA from the export's status.
func TestKubectlVirtualMachineExport(t *testing.T) {
	requireKubectlBinary(t)
	dir := t.TempDir()
	c, err := cluster.New(cluster.Options{Nodes: 1, Store: newStore(t), Storage: cluster.StorageOptions{Dir: dir}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	ts := startServer(t, c.Store(), apiserver.GenericOptions{})
	k := kubectlRunner{t: t, kubeconfig: ts.kubeconfig(t, "")}

	k.ok(exportDataVolume, "apply", "-f", "-")
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	_, err = cluster.WaitFor(wctx, c.Store(), store.Key{Namespace: "default", Name: "export-disk"},
		func() *virtkit.DataVolume { return &virtkit.DataVolume{} }, &virtkit.DataVolumeList{},
		func(dv *virtkit.DataVolume, found bool) bool {
			return found && dv.Status.Phase == virtkit.DataVolumeSucceeded
		})
	require.NoError(t, err)

	// What a guest wrote to the disk.
	disk := filepath.Join(dir, "shared", "dv", "default", "export-disk.img")
	written := make([]byte, 256<<10)
	_, err = rand.Read(written)
	require.NoError(t, err)
	f, err := os.OpenFile(disk, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(written, 512<<10)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	want, err := os.ReadFile(disk)
	require.NoError(t, err)

	k.ok(exportManifest, "apply", "-f", "-")
	k.ok("", "wait", "vmexport/export-disk", "--for=jsonpath={.status.phase}=Ready", "--timeout=60s")
	table := k.ok("", "get", "vmexports")
	assert.Contains(t, table, "SOURCEKIND")
	assert.Regexp(t, `export-disk\s+PersistentVolumeClaim\s+export-disk\s+Ready`, table)

	get := func(jsonpath string) string {
		return k.ok("", "get", "virtualmachineexport", "export-disk", "-o", "jsonpath="+jsonpath)
	}
	secret := get("{.status.tokenSecretRef}")
	require.Equal(t, "export-token-export-disk", secret)
	tokB64 := k.ok("", "get", "secret", secret, "-o", "jsonpath={.data.token}")
	token, err := base64.StdEncoding.DecodeString(strings.TrimSpace(tokB64))
	require.NoError(t, err)
	cert := get("{.status.links.external.cert}")
	rawURL := get(`{.status.links.external.volumes[?(@.name=="export-disk")].formats[?(@.format=="raw")].url}`)
	gzURL := get(`{.status.links.external.volumes[?(@.name=="export-disk")].formats[?(@.format=="gzip")].url}`)
	require.Contains(t, rawURL, "/api/export.kubevirt.io/v1/namespaces/default/virtualmachineexports/export-disk/volumes/export-disk/disk.img")

	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM([]byte(cert)))
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: time.Minute}
	fetch := func(url, tok string) (int, []byte) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		require.NoError(t, err)
		if tok != "" {
			req.Header.Set(virtkit.ExportTokenHeader, tok)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, b
	}
	code, body := fetch(rawURL, string(token))
	require.Equal(t, http.StatusOK, code)
	assert.True(t, bytes.Equal(want, body), "raw download equals the disk")
	code, body = fetch(gzURL, string(token))
	require.Equal(t, http.StatusOK, code)
	zr, err := gzip.NewReader(bytes.NewReader(body))
	require.NoError(t, err)
	unzipped, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, unzipped), "gunzipped download equals the disk")
	code, _ = fetch(rawURL, "")
	assert.Equal(t, http.StatusUnauthorized, code)
	code, _ = fetch(rawURL+"?"+virtkit.ExportTokenHeader+"="+string(token), "")
	assert.Equal(t, http.StatusOK, code, "the token as a query parameter")

	// Deleting the export stops its server.
	k.ok("", "delete", "vmexport", "export-disk")
	require.Eventually(t, func() bool {
		_, err := client.Get(rawURL)
		return err != nil
	}, 60*time.Second, 100*time.Millisecond, "the export server stops")
}
