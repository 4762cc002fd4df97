package importer_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cdi/importer"
	"github.com/virtkit/virtkit/reconcile"
)

const (
	testAccessKey = "AKIAVIRTKITTEST"
	testSecretKey = "virtkit-test-secret-key"
)

// s3Server is gofakes3 (an in-memory S3 server) on loopback, behind a
// check of every request's AWS Signature Version 4 against the test
// credentials (gofakes3 does not check signatures itself).
type s3Server struct {
	*httptest.Server
	backend *s3mem.Backend
	refused atomic.Int32
	// ranges are the Range headers of the GETs served.
	ranges atomic.Value
}

func newS3Server(t *testing.T, tlsServer bool) *s3Server {
	t.Helper()
	s := &s3Server{backend: s3mem.New()}
	fake := gofakes3.New(s.backend, gofakes3.WithAutoBucket(false))
	h := fake.Server()
	check := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := verifySigV4(r, testAccessKey, testSecretKey); err != "" {
			s.refused.Add(1)
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>SignatureDoesNotMatch</Code><Message>` + err + `</Message></Error>`))
			return
		}
		if rg := r.Header.Get("Range"); r.Method == http.MethodGet && rg != "" {
			s.ranges.Store(rg)
		}
		h.ServeHTTP(w, r)
	})
	if tlsServer {
		s.Server = httptest.NewTLSServer(check)
	} else {
		s.Server = httptest.NewServer(check)
	}
	t.Cleanup(s.Close)
	return s
}

func (s *s3Server) put(t *testing.T, bucket, key string, data []byte) {
	t.Helper()
	if err := s.backend.CreateBucket(bucket); err != nil && !gofakes3.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	// What gofakes3 records for an object PUT over HTTP.
	meta := map[string]string{"Last-Modified": time.Now().UTC().Format(http.TimeFormat), "Content-Type": "application/octet-stream"}
	_, err := s.backend.PutObject(bucket, key, meta, bytes.NewReader(data), int64(len(data)), nil)
	require.NoError(t, err)
}

// verifySigV4 recomputes the request's Signature Version 4 from its
// method, path, query, signed headers and payload hash; "" when it
// matches.
func verifySigV4(r *http.Request, accessKey, secret string) string {
	auth := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return "not signed with AWS4-HMAC-SHA256"
	}
	parts := map[string]string{}
	for p := range strings.SplitSeq(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		parts[k] = v
	}
	cred := strings.Split(parts["Credential"], "/")
	if len(cred) != 5 || cred[0] != accessKey || cred[3] != "s3" || cred[4] != "aws4_request" {
		return "unknown credential " + parts["Credential"]
	}
	date, region := cred[1], cred[2]
	amzDate := r.Header.Get("X-Amz-Date")
	if !strings.HasPrefix(amzDate, date) {
		return "date mismatch"
	}
	signed := strings.Split(parts["SignedHeaders"], ";")
	if !slices.Contains(signed, "host") {
		return "host not signed"
	}
	var hdrs strings.Builder
	for _, h := range signed {
		v := r.Header.Values(h)
		if h == "host" {
			v = []string{r.Host}
		}
		hdrs.WriteString(h + ":" + strings.Join(v, ",") + "\n")
	}
	q := r.URL.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var query []string
	for _, k := range keys {
		vs := slices.Clone(q[k])
		slices.Sort(vs)
		for _, v := range vs {
			query = append(query, url.QueryEscape(k)+"="+strings.ReplaceAll(url.QueryEscape(v), "+", "%20"))
		}
	}
	canonical := strings.Join([]string{r.Method, r.URL.EscapedPath(), strings.Join(query, "&"), hdrs.String(),
		parts["SignedHeaders"], r.Header.Get("X-Amz-Content-Sha256")}, "\n")
	sum := sha256.Sum256([]byte(canonical))
	scope := strings.Join(cred[1:], "/")
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
	mac := func(key []byte, s string) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(s))
		return h.Sum(nil)
	}
	k := mac([]byte("AWS4"+secret), date)
	k = mac(k, region)
	k = mac(k, "s3")
	k = mac(k, "aws4_request")
	if want := hex.EncodeToString(mac(k, toSign)); !hmac.Equal([]byte(want), []byte(parts["Signature"])) {
		return "signature mismatch"
	}
	return ""
}

func TestImportS3(t *testing.T) {
	dir, marker := fixtures(t)
	srv := newS3Server(t, false)
	for _, f := range []string{"disk.raw", "disk.qcow2", "disk.qcow2.xz"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		srv.put(t, "images", "os/"+f, data)
	}
	im := newImporter(t)
	for _, f := range []string{"disk.raw", "disk.qcow2", "disk.qcow2.xz"} {
		t.Run(f, func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "disk.img")
			res, err := im.Import(context.Background(), importer.Request{S3: &importer.S3Source{
				URL: srv.URL + "/images/os/" + f, AccessKeyID: testAccessKey, SecretKey: testSecretKey,
			}, Target: target, Size: 8 << 20, Key: "s3-" + f})
			require.NoError(t, err)
			assert.Equal(t, int64(8<<20), res.Size)
			got, err := os.ReadFile(target)
			require.NoError(t, err)
			assert.Equal(t, marker, got[1<<20:1<<20+len(marker)])
		})
	}
	assert.Zero(t, srv.refused.Load(), "every request was signed with the credentials")

	tests := []struct {
		name      string
		src       importer.S3Source
		size      int64
		want      error
		permanent bool
		refused   bool
	}{
		{"wrong secret", importer.S3Source{URL: srv.URL + "/images/os/disk.raw", AccessKeyID: testAccessKey, SecretKey: "wrong"}, 8 << 20, importer.ErrBadSource, true, true},
		{"anonymous", importer.S3Source{URL: srv.URL + "/images/os/disk.raw"}, 8 << 20, importer.ErrBadSource, true, true},
		{"no such key", importer.S3Source{URL: srv.URL + "/images/none", AccessKeyID: testAccessKey, SecretKey: testSecretKey}, 8 << 20, importer.ErrBadSource, true, false},
		{"no such bucket", importer.S3Source{URL: srv.URL + "/nobucket/disk", AccessKeyID: testAccessKey, SecretKey: testSecretKey}, 8 << 20, importer.ErrBadSource, true, false},
		{"url without key", importer.S3Source{URL: srv.URL + "/images"}, 8 << 20, importer.ErrBadSource, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := srv.refused.Load()
			_, err := im.Import(context.Background(), importer.Request{S3: &tt.src, Target: filepath.Join(t.TempDir(), "d.img"), Size: tt.size, Key: "bad"})
			require.ErrorIs(t, err, tt.want)
			assert.Equal(t, tt.permanent, importer.Permanent(err))
			assert.Equal(t, tt.refused, srv.refused.Load() > before)
			assert.NotContains(t, importer.TenantMessage(err), testSecretKey)
		})
	}
}

// An object larger than the import may take is refused before it is read.
func TestImportS3TooLarge(t *testing.T) {
	srv := newS3Server(t, false)
	srv.put(t, "images", "big", make([]byte, 2<<20))
	im, err := importer.New(importer.Options{ScratchDir: t.TempDir(), AllowedNetworks: loopback, MaxBytes: 1 << 20})
	require.NoError(t, err)
	_, err = im.Import(context.Background(), importer.Request{S3: &importer.S3Source{URL: srv.URL + "/images/big",
		AccessKeyID: testAccessKey, SecretKey: testSecretKey}, Target: filepath.Join(t.TempDir(), "d.img"), Key: "big"})
	require.ErrorIs(t, err, importer.ErrTooLarge)
	assert.True(t, importer.Permanent(err))
}

// A partial download left by an interrupted attempt is resumed with a
// Range request (guarded by the object's ETag) instead of starting over.
func TestImportS3Resumes(t *testing.T) {
	dir, marker := fixtures(t)
	srv := newS3Server(t, false)
	raw, err := os.ReadFile(filepath.Join(dir, "disk.raw"))
	require.NoError(t, err)
	srv.put(t, "images", "disk.raw", raw)
	scratch := t.TempDir()
	im, err := importer.New(importer.Options{ScratchDir: scratch, AllowedNetworks: loopback})
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(scratch, "resume"), 0o755))
	half := len(raw) / 2
	require.NoError(t, os.WriteFile(filepath.Join(scratch, "resume", "source"), raw[:half], 0o644))
	target := filepath.Join(t.TempDir(), "d.img")
	_, err = im.Import(context.Background(), importer.Request{S3: &importer.S3Source{URL: srv.URL + "/images/disk.raw",
		AccessKeyID: testAccessKey, SecretKey: testSecretKey}, Target: target, Key: "resume"})
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("bytes=%d-", half), srv.ranges.Load())
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, marker, got[1<<20:1<<20+len(marker)])
	assert.Equal(t, raw, got)
}

// An https endpoint is trusted through RootCAs (the certConfigMap).
func TestImportS3HTTPS(t *testing.T) {
	dir, _ := fixtures(t)
	srv := newS3Server(t, true)
	data, err := os.ReadFile(filepath.Join(dir, "disk.qcow2"))
	require.NoError(t, err)
	srv.put(t, "bucket", "disk.qcow2", data)
	im := newImporter(t)
	src := importer.S3Source{URL: srv.URL + "/bucket/disk.qcow2", AccessKeyID: testAccessKey, SecretKey: testSecretKey}
	_, err = im.Import(context.Background(), importer.Request{S3: &src, Target: filepath.Join(t.TempDir(), "d.img"), Key: "untrusted"})
	require.Error(t, err, "the test server's certificate is not trusted by default")
	src.RootCAs = srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	_, err = im.Import(context.Background(), importer.Request{S3: &src, Target: filepath.Join(t.TempDir(), "d.img"), Key: "trusted"})
	require.NoError(t, err)
}

// The worker reads the credentials from the DataVolume's secretRef (CDI's
// accessKeyId and secretKey keys) and the CA bundle from its
// certConfigMap; while the Secret is missing the import waits, saying so
// in the Running condition, and goes on once it exists.
func TestWorkerS3Secret(t *testing.T) {
	dir, marker := fixtures(t)
	srv := newS3Server(t, true)
	data, err := os.ReadFile(filepath.Join(dir, "disk.qcow2"))
	require.NoError(t, err)
	srv.put(t, "images", "disk.qcow2", data)
	ctx := context.Background()
	e := newWorkerEnv(t, 3)
	dv := &virtkit.DataVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "s3", Namespace: "ns", Annotations: map[string]string{virtkit.DataVolumeImportNodeAnnotation: "n1"}},
		Spec: virtkit.DataVolumeSpec{Source: &virtkit.DataVolumeImportSource{S3: &virtkit.DataVolumeSourceS3{
			URL: srv.URL + "/images/disk.qcow2", SecretRef: "s3-creds", CertConfigMap: "s3-ca"}},
			Storage: &virtkit.PersistentVolumeClaimSpec{Resources: virtkit.VolumeResourceRequirements{
				Requests: virtkit.ResourceList{virtkit.ResourceStorage: resource.MustParse("8Mi")}}}},
	}
	require.NoError(t, e.st.Create(ctx, dv))
	dv.Status.Phase = virtkit.DataVolumeImportScheduled
	require.NoError(t, e.st.UpdateStatus(ctx, dv))
	req := reconcile.Request{Namespace: "ns", Name: "s3"}

	res, err := e.w.Reconcile(ctx, req)
	require.NoError(t, err)
	assert.Positive(t, res.RequeueAfter)
	got := e.get(t, "s3")
	assert.Equal(t, virtkit.DataVolumeImportScheduled, got.Status.Phase, "waits, does not fail")
	running := got.Status.Condition(virtkit.DataVolumeRunning)
	require.NotNil(t, running)
	assert.Equal(t, importer.ReasonCreateContainerConfigError, running.Reason)
	assert.Equal(t, `secret "s3-creds" not found`, running.Message)

	require.NoError(t, e.st.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-creds", Namespace: "ns"},
		Data: map[string][]byte{importer.SecretKeyAccessKeyID: []byte(testAccessKey), importer.SecretKeySecretKey: []byte(testSecretKey)}}))
	_, err = e.w.Reconcile(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, `configmap "s3-ca" not found`, e.get(t, "s3").Status.Condition(virtkit.DataVolumeRunning).Message)

	ca := srv.Certificate()
	pemCA := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}))
	require.NoError(t, e.st.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "s3-ca", Namespace: "ns"},
		Data: map[string]string{"ca.pem": pemCA}}))
	_, err = e.w.Reconcile(ctx, req)
	require.NoError(t, err)
	got = e.get(t, "s3")
	require.Equal(t, virtkit.DataVolumeSucceeded, got.Status.Phase, "conditions: %+v", got.Status.Conditions)
	disk, err := os.ReadFile(filepath.Join(e.local, "dv", "ns", "s3.img"))
	require.NoError(t, err)
	assert.Equal(t, marker, disk[1<<20:1<<20+len(marker)])
	assert.Zero(t, srv.refused.Load())
}
