package controller_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cdi"
	"github.com/virtkit/virtkit/cdi/export"
	"github.com/virtkit/virtkit/cdi/storage"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// exportEnv is a store with a shared storage class in a temporary
// directory, an export manager and the export reconciler on a fake clock.
type exportEnv struct {
	t     *testing.T
	st    store.Store
	dir   string
	class storage.SharedDir
	m     *export.Manager
	clk   *clocktesting.FakeClock
	r     *controller.ExportReconciler
	ev    *exportEvents
}

// exportEvents records the reasons of the events recorded.
type exportEvents struct{ reasons []string }

func (r *exportEvents) Event(_ context.Context, _ virtkit.Object, _, reason, _, _ string) {
	r.reasons = append(r.reasons, reason)
}

func newExportEnv(t *testing.T) *exportEnv {
	t.Helper()
	dir := t.TempDir()
	e := &exportEnv{t: t, st: store.NewMemory(), dir: dir, class: storage.SharedDir{Dir: dir},
		clk: clocktesting.NewFakeClock(time.Now()), ev: &exportEvents{}}
	m, err := export.NewManager(export.ManagerOptions{AllowedDirs: []string{dir}})
	require.NoError(t, err)
	t.Cleanup(m.Close)
	e.m = m
	e.r, err = controller.NewExportReconciler(controller.ReconcilerOptions{Store: e.st, Clock: e.clk, Events: e.ev},
		controller.ExportOptions{Volumes: &cdi.FileExportVolumes{Classes: storage.Classes{List: []storage.Class{e.class}}}, Servers: m})
	require.NoError(t, err)
	return e
}

// dataVolume stores an imported, bound DataVolume whose file holds data.
func (e *exportEnv) dataVolume(name string, data []byte) {
	e.t.Helper()
	p := e.class.Path("", "default", name)
	require.NoError(e.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(e.t, os.WriteFile(p, data, 0o600))
	dv := &virtkit.DataVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
		Annotations: map[string]string{virtkit.DataVolumeStorageClassAnnotation: storage.SharedClass}},
		Spec: virtkit.DataVolumeSpec{Source: &virtkit.DataVolumeImportSource{Blank: &virtkit.DataVolumeBlankImage{}}},
		Status: virtkit.DataVolumeStatus{Phase: virtkit.DataVolumeSucceeded,
			Conditions: []virtkit.DataVolumeCondition{{Type: virtkit.DataVolumeBound, Status: virtkit.ConditionTrue}}}}
	require.NoError(e.t, e.st.Create(context.Background(), dv))
}

func (e *exportEnv) vm(name string, claims ...string) {
	e.t.Helper()
	halted := virtkit.RunStrategyHalted
	vm := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: virtkit.VirtualMachineSpec{RunStrategy: &halted, Template: &virtkit.VirtualMachineInstanceTemplateSpec{}}}
	for _, c := range claims {
		vm.Spec.Template.Spec.Volumes = append(vm.Spec.Template.Spec.Volumes,
			virtkit.Volume{Name: c, VolumeSource: virtkit.VolumeSource{DataVolume: &virtkit.DataVolumeSource{Name: c}}})
	}
	require.NoError(e.t, e.st.Create(context.Background(), vm))
}

func (e *exportEnv) export(name, kind, group, source string, mutate ...func(*virtkit.VirtualMachineExport)) {
	e.t.Helper()
	exp := &virtkit.VirtualMachineExport{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: virtkit.VirtualMachineExportSpec{Source: virtkit.TypedLocalObjectReference{Kind: kind, Name: source}}}
	if group != "" {
		exp.Spec.Source.APIGroup = &group
	}
	for _, f := range mutate {
		f(exp)
	}
	require.NoError(e.t, e.st.Create(context.Background(), exp))
}

func (e *exportEnv) reconcile(name string) (controller.Result, *virtkit.VirtualMachineExport) {
	e.t.Helper()
	res, err := e.r.Reconcile(context.Background(), reconcile.Request{Namespace: "default", Name: name})
	require.NoError(e.t, err)
	exp := &virtkit.VirtualMachineExport{}
	if err := e.st.Get(context.Background(), store.Key{Namespace: "default", Name: name}, exp); err != nil {
		require.ErrorIs(e.t, err, store.ErrNotFound)
		return res, nil
	}
	return res, exp
}

func (e *exportEnv) token(exp *virtkit.VirtualMachineExport) string {
	e.t.Helper()
	require.NotNil(e.t, exp.Status.TokenSecretRef)
	sec := &corev1.Secret{}
	require.NoError(e.t, e.st.Get(context.Background(), store.Key{Namespace: "default", Name: *exp.Status.TokenSecretRef}, sec))
	return string(sec.Data[virtkit.ExportTokenKey])
}

// download GETs url with token, trusting cert.
func download(t *testing.T, url, cert, token string) (int, []byte) {
	t.Helper()
	pool := x509Pool(t, cert)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 30 * time.Second}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set(virtkit.ExportTokenHeader, token)
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

func formatURL(t *testing.T, l *virtkit.VirtualMachineExportLink, vol string, f virtkit.ExportVolumeFormat) string {
	t.Helper()
	for _, v := range l.Volumes {
		if v.Name == vol {
			for _, ff := range v.Formats {
				if ff.Format == f {
					return ff.URL
				}
			}
		}
	}
	t.Fatalf("no %s link for volume %s in %+v", f, vol, l)
	return ""
}

func condition(exp *virtkit.VirtualMachineExport, ct virtkit.ConditionType) virtkit.Condition {
	for _, c := range exp.Status.Conditions {
		if c.Type == ct {
			return c
		}
	}
	return virtkit.Condition{}
}

func TestExportClaimReadyAndDownload(t *testing.T) {
	e := newExportEnv(t)
	data := bytes.Repeat([]byte("virtkit-export-"), 40000)
	e.dataVolume("disk", data)
	e.export("exp", "PersistentVolumeClaim", "", "disk")

	res, exp := e.reconcile("exp")
	require.Equal(t, virtkit.ExportReady, exp.Status.Phase, "%+v", exp.Status.Conditions)
	assert.Equal(t, virtkit.ConditionTrue, condition(exp, virtkit.ExportConditionReady).Status)
	assert.Equal(t, virtkit.ExportReasonPodReady, condition(exp, virtkit.ExportConditionReady).Reason)
	assert.Equal(t, virtkit.ExportReasonPVCBound, condition(exp, virtkit.ExportConditionPVCReady).Reason)
	assert.Equal(t, "export-token-exp", *exp.Status.TokenSecretRef)
	assert.Equal(t, "virt-export-exp", exp.Status.ServiceName)
	require.NotNil(t, exp.Status.TTLExpirationTime)
	assert.Equal(t, exp.CreationTimestamp.Add(virtkit.DefaultExportTTL), exp.Status.TTLExpirationTime.Time)
	assert.InDelta(t, float64(virtkit.DefaultExportTTL), float64(res.RequeueAfter), float64(time.Minute), "requeued for the TTL")

	tok := e.token(exp)
	assert.Len(t, tok, 20)
	for _, l := range []*virtkit.VirtualMachineExportLink{exp.Status.Links.Internal, exp.Status.Links.External} {
		require.NotNil(t, l)
		assert.Equal(t, e.m.CA().CertPEM(), l.Cert)
		code, body := download(t, formatURL(t, l, "disk", virtkit.ExportFormatRaw), l.Cert, tok)
		require.Equal(t, http.StatusOK, code)
		assert.True(t, bytes.Equal(data, body), "raw download equals the volume")
		code, body = download(t, formatURL(t, l, "disk", virtkit.ExportFormatGzip), l.Cert, tok)
		require.Equal(t, http.StatusOK, code)
		zr, err := gzip.NewReader(bytes.NewReader(body))
		require.NoError(t, err)
		got, err := io.ReadAll(zr)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(data, got), "gunzipped download equals the volume")
		code, _ = download(t, formatURL(t, l, "disk", virtkit.ExportFormatRaw), l.Cert, "wrong")
		assert.Equal(t, http.StatusUnauthorized, code)
		code, _ = download(t, formatURL(t, l, "disk", virtkit.ExportFormatRaw), l.Cert, "")
		assert.Equal(t, http.StatusUnauthorized, code)
	}

	// Reconciling again keeps the token and the server.
	_, again := e.reconcile("exp")
	assert.Equal(t, exp.Status.Links, again.Status.Links)
	assert.Equal(t, tok, e.token(again))
}

func TestExportVMWaitsWhileRunning(t *testing.T) {
	e := newExportEnv(t)
	e.dataVolume("vm-root", []byte("root disk"))
	e.vm("vm", "vm-root")
	vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "default"},
		Status: virtkit.VirtualMachineInstanceStatus{Phase: virtkit.Running}}
	require.NoError(t, e.st.Create(context.Background(), vmi))
	e.export("exp", virtkit.KindVirtualMachine, virtkit.GroupName, "vm")

	_, exp := e.reconcile("exp")
	require.Equal(t, virtkit.ExportPending, exp.Status.Phase)
	ready := condition(exp, virtkit.ExportConditionReady)
	assert.Equal(t, virtkit.ConditionFalse, ready.Status)
	assert.Equal(t, virtkit.ExportReasonInUse, ready.Reason)
	assert.Equal(t, "Virtual Machine default/vm is running", ready.Message)
	assert.Nil(t, exp.Status.Links)
	assert.Equal(t, "vm", *exp.Status.VirtualMachineName)
	assert.False(t, e.m.Running("default", "exp"))

	// The VM stops: the export becomes ready.
	require.NoError(t, e.st.Delete(context.Background(), vmi, store.DeleteOptions{}))
	_, exp = e.reconcile("exp")
	require.Equal(t, virtkit.ExportReady, exp.Status.Phase, "%+v", exp.Status.Conditions)
	code, body := download(t, formatURL(t, exp.Status.Links.Internal, "vm-root", virtkit.ExportFormatRaw),
		exp.Status.Links.Internal.Cert, e.token(exp))
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "root disk", string(body))

	// It starts again: the server stops, the export waits.
	vmi.ResourceVersion = ""
	require.NoError(t, e.st.Create(context.Background(), vmi))
	_, exp = e.reconcile("exp")
	assert.Equal(t, virtkit.ExportPending, exp.Status.Phase)
	assert.False(t, e.m.Running("default", "exp"))
	assert.Equal(t, []string{controller.EventReasonExportSecretCreated, controller.EventReasonExporterCreated,
		controller.EventReasonExportPaused}, e.ev.reasons)
}

func TestExportVMWithoutVolumesIsSkipped(t *testing.T) {
	e := newExportEnv(t)
	e.vm("empty")
	e.export("exp", virtkit.KindVirtualMachine, virtkit.GroupName, "empty")
	_, exp := e.reconcile("exp")
	assert.Equal(t, virtkit.ExportSkipped, exp.Status.Phase)
	assert.Equal(t, virtkit.ExportReasonNoVolumes, condition(exp, virtkit.ExportConditionReady).Reason)
}

func TestExportTTLDeletes(t *testing.T) {
	e := newExportEnv(t)
	e.dataVolume("disk", []byte("data"))
	e.export("exp", "PersistentVolumeClaim", "", "disk", func(x *virtkit.VirtualMachineExport) {
		x.Spec.TTLDuration = &metav1.Duration{Duration: 10 * time.Minute}
	})
	cur := &virtkit.VirtualMachineExport{}
	require.NoError(t, e.st.Get(context.Background(), store.Key{Namespace: "default", Name: "exp"}, cur))
	e.clk.SetTime(cur.CreationTimestamp.Time)

	res, exp := e.reconcile("exp")
	require.Equal(t, virtkit.ExportReady, exp.Status.Phase)
	assert.Equal(t, 10*time.Minute, res.RequeueAfter)
	assert.True(t, e.m.Running("default", "exp"))

	e.clk.Step(9 * time.Minute)
	_, exp = e.reconcile("exp")
	require.NotNil(t, exp, "not expired yet")

	e.clk.Step(time.Minute)
	_, exp = e.reconcile("exp")
	assert.Nil(t, exp, "the export is deleted when its TTL expires")
	assert.False(t, e.m.Running("default", "exp"))
}

func TestExportTokenSecretRef(t *testing.T) {
	e := newExportEnv(t)
	e.dataVolume("disk", []byte("data"))
	e.export("exp", "PersistentVolumeClaim", "", "disk", func(x *virtkit.VirtualMachineExport) {
		x.Spec.TokenSecretRef = exportPtr("mine")
	})
	_, exp := e.reconcile("exp")
	require.Equal(t, virtkit.ExportPending, exp.Status.Phase)
	assert.Equal(t, virtkit.ExportReasonPodPending, condition(exp, virtkit.ExportConditionReady).Reason)
	assert.Contains(t, condition(exp, virtkit.ExportConditionReady).Message, "mine")
	sec := &corev1.Secret{}
	require.ErrorIs(t, e.st.Get(context.Background(), store.Key{Namespace: "default", Name: "export-token-exp"}, sec), store.ErrNotFound,
		"no default secret when the user names one")

	require.NoError(t, e.st.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "default"},
		Data: map[string][]byte{"token": []byte("user-token")}}))
	_, exp = e.reconcile("exp")
	require.Equal(t, virtkit.ExportReady, exp.Status.Phase)
	l := exp.Status.Links.External
	code, body := download(t, formatURL(t, l, "disk", virtkit.ExportFormatRaw), l.Cert, "user-token")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "data", string(body))
}

func TestExportRefusesQcow2(t *testing.T) {
	e := newExportEnv(t)
	e.dataVolume("disk", append([]byte{'Q', 'F', 'I', 0xfb}, make([]byte, 100)...))
	e.export("exp", "PersistentVolumeClaim", "", "disk")
	_, exp := e.reconcile("exp")
	require.Equal(t, virtkit.ExportPending, exp.Status.Phase)
	assert.Contains(t, condition(exp, virtkit.ExportConditionReady).Message, "not a raw disk image")
}

func TestExportSnapshotSource(t *testing.T) {
	e := newExportEnv(t)
	e.dataVolume("vm-root", []byte("now"))
	snapFile := filepath.Join(filepath.Dir(e.class.Path("", "default", "vm-root")), ".snapshots", "vs-1.img")
	require.NoError(t, os.MkdirAll(filepath.Dir(snapFile), 0o755))
	require.NoError(t, os.WriteFile(snapFile, []byte("then"), 0o600))
	ctx := context.Background()
	snap := &virtkit.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "snap", Namespace: "default"},
		Spec: virtkit.VirtualMachineSnapshotSpec{Source: virtkit.TypedLocalObjectReference{Kind: virtkit.KindVirtualMachine, Name: "vm"}}}
	require.NoError(t, e.st.Create(ctx, snap))
	e.export("exp", virtkit.KindVirtualMachineSnapshot, virtkit.SnapshotGroupName, "snap")
	_, exp := e.reconcile("exp")
	assert.Equal(t, virtkit.ExportPending, exp.Status.Phase, "a snapshot not ready yet")
	assert.Equal(t, "VirtualMachineSnapshot default/snap is not ready to use", condition(exp, virtkit.ExportConditionReady).Message)

	content := &virtkit.VirtualMachineSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: "snap-content", Namespace: "default"},
		Spec: virtkit.VirtualMachineSnapshotContentSpec{VolumeBackups: []virtkit.VolumeBackup{{VolumeName: "root",
			VolumeSnapshotName: exportPtr("vs-1"), PersistentVolumeClaim: virtkit.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{
				Name: "vm-root", Annotations: map[string]string{virtkit.DataVolumeStorageClassAnnotation: storage.SharedClass}}}}}}}
	require.NoError(t, e.st.Create(ctx, content))
	snap.Status = &virtkit.VirtualMachineSnapshotStatus{ReadyToUse: exportPtr(true), VirtualMachineSnapshotContentName: exportPtr("snap-content")}
	require.NoError(t, e.st.UpdateStatus(ctx, snap))

	_, exp = e.reconcile("exp")
	require.Equal(t, virtkit.ExportReady, exp.Status.Phase, "%+v", exp.Status.Conditions)
	assert.Equal(t, virtkit.ConditionTrue, condition(exp, virtkit.ExportConditionVolumesCreated).Status)
	assert.Equal(t, virtkit.ExportReasonAllPVCsReady, condition(exp, virtkit.ExportConditionVolumesCreated).Reason)
	assert.Equal(t, "vm", *exp.Status.VirtualMachineName)
	code, body := download(t, formatURL(t, exp.Status.Links.Internal, "vm-root", virtkit.ExportFormatRaw),
		exp.Status.Links.Internal.Cert, e.token(exp))
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "then", string(body), "the snapshot's data, not the volume's")
}

func TestExportDeletedStopsServer(t *testing.T) {
	e := newExportEnv(t)
	e.dataVolume("disk", []byte("data"))
	e.export("exp", "PersistentVolumeClaim", "", "disk")
	_, exp := e.reconcile("exp")
	require.True(t, e.m.Running("default", "exp"))
	require.NoError(t, e.st.Delete(context.Background(), exp, store.DeleteOptions{}))
	_, gone := e.reconcile("exp")
	assert.Nil(t, gone)
	assert.False(t, e.m.Running("default", "exp"))
	sec := &corev1.Secret{}
	require.ErrorIs(t, e.st.Get(context.Background(), store.Key{Namespace: "default", Name: "export-token-exp"}, sec), store.ErrNotFound,
		"the token secret the export made goes with it")
}

func x509Pool(t *testing.T, certPEM string) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	require.True(t, p.AppendCertsFromPEM([]byte(certPEM)), "status cert is a PEM certificate")
	return p
}
func exportPtr[T any](v T) *T { return &v }

func TestExportSnapshotMissingOrEmpty(t *testing.T) {
	e := newExportEnv(t)
	ctx := context.Background()
	e.export("exp", virtkit.KindVirtualMachineSnapshot, virtkit.SnapshotGroupName, "snap")
	_, exp := e.reconcile("exp")
	assert.Equal(t, virtkit.ExportPending, exp.Status.Phase)
	assert.Equal(t, virtkit.ExportReasonInitializing, condition(exp, virtkit.ExportConditionReady).Reason)

	content := &virtkit.VirtualMachineSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: "snap-content", Namespace: "default"}}
	require.NoError(t, e.st.Create(ctx, content))
	snap := &virtkit.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "snap", Namespace: "default"},
		Spec: virtkit.VirtualMachineSnapshotSpec{Source: virtkit.TypedLocalObjectReference{Kind: virtkit.KindVirtualMachine, Name: "vm"}}}
	require.NoError(t, e.st.Create(ctx, snap))
	snap.Status = &virtkit.VirtualMachineSnapshotStatus{ReadyToUse: exportPtr(true), VirtualMachineSnapshotContentName: exportPtr("snap-content")}
	require.NoError(t, e.st.UpdateStatus(ctx, snap))
	_, exp = e.reconcile("exp")
	assert.Equal(t, virtkit.ExportSkipped, exp.Status.Phase, "a snapshot without volumes")
	assert.Equal(t, virtkit.ExportReasonSnapshotNoVolumes, condition(exp, virtkit.ExportConditionVolumesCreated).Reason)
}
