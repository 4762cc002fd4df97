package controller

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// Event reasons of the export reconciler (KubeVirt's export controller's
// strings).
const (
	EventReasonExportSecretCreated = "SecretCreated"
	EventReasonExporterCreated     = "ExporterPodCreated"
	EventReasonExportPaused        = "ExportPaused"
)

// exportRetry is how soon an export waiting for its source (a running VM,
// an importing DataVolume, a snapshot in progress) is looked at again.
const exportRetry = 3 * time.Second

// exportTokenLength is the length of a generated export token.
const exportTokenLength = 20

// ExportOptions configure the export reconciler.
type ExportOptions struct {
	// Volumes finds the volumes' files; nil leaves every export with
	// volumes Pending with a "not supported" message.
	Volumes ExportVolumeLocator
	// Servers runs the export servers; nil, as Volumes.
	Servers ExportServers
}

// ExportReconciler is KubeVirt's VirtualMachineExport controller: for a
// stopped VM, a ready VirtualMachineSnapshot or a DataVolume's claim not
// used by a running VMI, it creates the token Secret (unless
// spec.tokenSecretRef names one), runs an export server serving the
// volumes raw and gzipped, and reports the links (with the server's CA)
// in status. A VM that runs, or a claim a running VMI uses, stops the
// server and leaves the export Pending (Ready false, InUse) until it is
// free; a VM without volumes is Skipped. The export is deleted once its
// TTL (spec.ttlDuration, two hours by default) has passed since its
// creation.
type ExportReconciler struct {
	o  ReconcilerOptions
	eo ExportOptions
}

var _ Reconciler = (*ExportReconciler)(nil)

// NewExportReconciler returns the VirtualMachineExport reconciler.
func NewExportReconciler(o ReconcilerOptions, eo ExportOptions) (*ExportReconciler, error) {
	o, err := o.withDefaults("export")
	if err != nil {
		return nil, err
	}
	return &ExportReconciler{o: o, eo: eo}, nil
}

// Watches returns every export, and the VMs, VMIs, DataVolumes, snapshots
// and Secrets whose changes may let the exports in their namespace go on.
func (r *ExportReconciler) Watches() []Watch {
	return []Watch{
		{NewList: func() virtkit.ObjectList { return &virtkit.VirtualMachineExportList{} }, Map: ObjectKey},
		{NewList: func() virtkit.ObjectList { return &virtkit.VirtualMachineList{} }, Map: r.exportsInNamespace},
		{NewList: func() virtkit.ObjectList { return &virtkit.VirtualMachineInstanceList{} }, Map: r.exportsInNamespace},
		{NewList: dataVolumeList, Map: r.exportsInNamespace},
		{NewList: func() virtkit.ObjectList { return &virtkit.VirtualMachineSnapshotList{} }, Map: r.exportsInNamespace},
		{NewList: func() virtkit.ObjectList { return &corev1.SecretList{} }, Map: r.exportsInNamespace},
	}
}

func (r *ExportReconciler) exportsInNamespace(ctx context.Context, obj virtkit.Object) []Request {
	var list virtkit.VirtualMachineExportList
	if err := r.o.Store.List(ctx, &list, store.ListOptions{Namespace: obj.GetNamespace()}); err != nil {
		return nil
	}
	reqs := make([]Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, Request{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name})
	}
	return reqs
}

// exportSource is what an export's source resolves to.
type exportSource struct {
	volumes   []exportVolume
	populated bool   // every volume has its data
	inUse     bool   // a running VMI uses the source
	message   string // why the source is not available
	vmName    *string
	claims    []*virtkit.DataVolume // the claims exported, for PVCReady
	notFound  bool                  // the source object does not exist
	snapshot  bool                  // the source is a VirtualMachineSnapshot
	content   bool                  // the snapshot's content exists
}

type exportVolume struct {
	name     string
	volume   SnapshotVolume
	snapshot string // the volume snapshot's name, for a snapshot source
}

func (s *exportSource) available() bool { return !s.inUse && s.populated && len(s.volumes) > 0 }

// Reconcile implements Reconciler.
func (r *ExportReconciler) Reconcile(ctx context.Context, req Request) (Result, error) {
	exp := &virtkit.VirtualMachineExport{}
	found, err := getOptional(ctx, r.o.Store, keyOf(req), exp)
	if err != nil {
		return Result{}, err
	}
	if !found || exp.DeletionTimestamp != nil {
		if err := r.stop(ctx, req.Namespace, req.Name); err != nil {
			return Result{}, err
		}
		if !found {
			return Result{}, r.deleteTokenSecret(ctx, req.Namespace, req.Name)
		}
		return Result{}, nil
	}
	now := r.o.Clock.Now()
	expiry := exportExpiry(exp)
	if !now.Before(expiry) {
		if err := r.stop(ctx, exp.Namespace, exp.Name); err != nil {
			return Result{}, err
		}
		r.o.Logger.Info("export TTL expired, deleting it", "namespace", exp.Namespace, "name", exp.Name)
		if err := r.o.Store.Delete(ctx, exp, store.DeleteOptions{}); err != nil && !errors.Is(err, store.ErrNotFound) {
			return Result{}, err
		}
		return Result{}, nil
	}
	old := exp.Status.DeepCopy()
	if exp.Status == nil {
		exp.Status = &virtkit.VirtualMachineExportStatus{
			Phase: virtkit.ExportPending,
			Conditions: []virtkit.Condition{
				r.condition(virtkit.ExportConditionReady, virtkit.ConditionFalse, virtkit.ExportReasonInitializing, ""),
				r.condition(virtkit.ExportConditionPVCReady, virtkit.ConditionFalse, virtkit.ExportReasonUnknown, ""),
			},
		}
	}
	st := exp.Status
	exp.Status.TTLExpirationTime = &metav1.Time{Time: expiry}
	st.ServiceName = exportServiceName(exp.Name)
	if exp.Spec.TokenSecretRef != nil {
		st.TokenSecretRef = exp.Spec.TokenSecretRef
	}

	src, err := r.source(ctx, exp)
	if err != nil {
		return Result{}, err
	}
	st.VirtualMachineName = src.vmName
	st.Conditions = setExportCondition(st.Conditions, r.pvcCondition(src))

	retry := time.Duration(0)
	if src.available() {
		retry, err = r.serve(ctx, exp, src)
		if err != nil {
			return Result{}, err
		}
	} else {
		if r.eo.Servers != nil && r.eo.Servers.Running(exp.Namespace, exp.Name) {
			RecordEvent(ctx, r.o.Events, exp, virtkit.EventTypeWarning, EventReasonExportPaused, "Export", "%s", src.message)
			if err := r.stop(ctx, exp.Namespace, exp.Name); err != nil {
				return Result{}, err
			}
		}
		st.Links = nil
		st.Phase = virtkit.ExportPending
		st.Conditions = setExportCondition(st.Conditions,
			r.condition(virtkit.ExportConditionReady, virtkit.ConditionFalse, virtkit.ExportReasonInUse, src.message))
		if len(src.volumes) == 0 && !src.snapshot && exp.Spec.Source.Kind == virtkit.KindVirtualMachine {
			st.Phase = virtkit.ExportSkipped
			st.Conditions = setExportCondition(st.Conditions,
				r.condition(virtkit.ExportConditionReady, virtkit.ConditionFalse, virtkit.ExportReasonNoVolumes, src.message))
		}
		if !src.populated || src.notFound {
			retry = exportRetry
		}
	}
	if src.snapshot {
		r.snapshotConditions(st, src)
	}
	if !equality.Semantic.DeepEqual(old, exp.Status) {
		if err := r.o.Store.UpdateStatus(ctx, exp); err != nil {
			return Result{}, err
		}
	}
	// Come back when the TTL expires (or sooner to retry).
	untilExpiry := expiry.Sub(now)
	if retry == 0 || untilExpiry < retry {
		retry = untilExpiry
	}
	return Result{RequeueAfter: retry}, nil
}

// snapshotConditions are KubeVirt's for a snapshot source: a missing
// snapshot leaves Ready Initializing; once its content exists,
// VolumesCreated says whether its volume snapshots can be served, and a
// content without any skips the export.
func (r *ExportReconciler) snapshotConditions(st *virtkit.VirtualMachineExportStatus, src *exportSource) {
	switch {
	case src.notFound && !src.content:
		st.Conditions = setExportCondition(st.Conditions,
			r.condition(virtkit.ExportConditionReady, virtkit.ConditionFalse, virtkit.ExportReasonInitializing, ""))
	case !src.content:
	case len(src.volumes) == 0:
		st.Phase = virtkit.ExportSkipped
		st.Conditions = setExportCondition(st.Conditions,
			r.condition(virtkit.ExportConditionVolumesCreated, virtkit.ConditionFalse, virtkit.ExportReasonSnapshotNoVolumes, src.message))
		st.Conditions = setExportCondition(st.Conditions,
			r.condition(virtkit.ExportConditionReady, virtkit.ConditionFalse, virtkit.ExportReasonInitializing, ""))
	case src.populated:
		st.Conditions = setExportCondition(st.Conditions,
			r.condition(virtkit.ExportConditionVolumesCreated, virtkit.ConditionTrue, virtkit.ExportReasonAllPVCsReady, ""))
	default:
		st.Conditions = setExportCondition(st.Conditions,
			r.condition(virtkit.ExportConditionVolumesCreated, virtkit.ConditionFalse, virtkit.ExportReasonNotAllPVCsCreated, src.message))
	}
}

// serve makes sure the token Secret exists and a server serves the
// source's volumes, and fills the links. A failure the user can act on
// (a missing token Secret, a volume file that cannot be served) leaves
// the export Pending with the reason in its Ready condition and asks for
// a retry.
func (r *ExportReconciler) serve(ctx context.Context, exp *virtkit.VirtualMachineExport, src *exportSource) (time.Duration, error) {
	st := exp.Status
	pending := func(reason, msg string) (time.Duration, error) {
		st.Links = nil
		st.Phase = virtkit.ExportPending
		st.Conditions = setExportCondition(st.Conditions, r.condition(virtkit.ExportConditionReady, virtkit.ConditionFalse, reason, msg))
		return exportRetry, r.stop(ctx, exp.Namespace, exp.Name)
	}
	token, err := r.token(ctx, exp)
	if err != nil {
		if errors.Is(err, ErrExport) {
			return pending(virtkit.ExportReasonPodPending, err.Error())
		}
		return 0, err
	}
	if r.eo.Volumes == nil || r.eo.Servers == nil {
		return pending(virtkit.ExportReasonUnknown,
			"exporting volumes is not supported by this control plane (no export server or volume locator configured)")
	}
	vols := make([]ExportVolume, 0, len(src.volumes))
	for _, v := range src.volumes {
		var p string
		if v.snapshot != "" {
			p, err = r.eo.Volumes.SnapshotPath(ctx, v.volume, v.snapshot)
		} else {
			p, err = r.eo.Volumes.VolumePath(ctx, v.volume)
		}
		if err != nil {
			return pending(virtkit.ExportReasonUnknown, fmt.Sprintf("volume %s: %v", v.name, err))
		}
		vols = append(vols, ExportVolume{Name: v.name, Path: p})
	}
	wasRunning := r.eo.Servers.Running(exp.Namespace, exp.Name)
	ep, err := r.eo.Servers.Ensure(ctx, exp.Namespace, exp.Name, token, vols)
	if err != nil {
		return pending(virtkit.ExportReasonUnknown, err.Error())
	}
	if !wasRunning {
		RecordEvent(ctx, r.o.Events, exp, virtkit.EventTypeNormal, EventReasonExporterCreated, "Export",
			"Created exporter %s/%s at %s", exp.Namespace, exportServiceName(exp.Name), ep.InternalURL)
	}
	st.Phase = virtkit.ExportReady
	st.Conditions = setExportCondition(st.Conditions, r.condition(virtkit.ExportConditionReady, virtkit.ConditionTrue, virtkit.ExportReasonPodReady, ""))
	st.Links = &virtkit.VirtualMachineExportLinks{
		Internal: exportLink(ep.InternalURL, ep.CACert, vols),
		External: exportLink(ep.ExternalURL, ep.CACert, vols),
	}
	return 0, nil
}

func exportLink(base, cert string, vols []ExportVolume) *virtkit.VirtualMachineExportLink {
	l := &virtkit.VirtualMachineExportLink{Cert: cert}
	for _, v := range vols {
		l.Volumes = append(l.Volumes, virtkit.VirtualMachineExportVolume{Name: v.Name, Formats: []virtkit.VirtualMachineExportVolumeFormat{
			{Format: virtkit.ExportFormatRaw, URL: base + "/volumes/" + v.Name + "/disk.img"},
			{Format: virtkit.ExportFormatGzip, URL: base + "/volumes/" + v.Name + "/disk.img.gz"},
		}})
	}
	return l
}

func (r *ExportReconciler) stop(ctx context.Context, namespace, name string) error {
	if r.eo.Servers == nil {
		return nil
	}
	return r.eo.Servers.Stop(ctx, namespace, name)
}

// exportExpiry is the export's creation plus its TTL.
func exportExpiry(exp *virtkit.VirtualMachineExport) time.Time {
	ttl := virtkit.DefaultExportTTL
	if exp.Spec.TTLDuration != nil {
		ttl = exp.Spec.TTLDuration.Duration
	}
	return exp.CreationTimestamp.Add(ttl)
}

// exportServiceName is KubeVirt's name of an export's service and
// exporter (virt-export-<name>, at most 63 characters).
func exportServiceName(name string) string { return truncateName("virt-export-" + name) }

// ExportTokenSecretName is the name of the token Secret an export
// without spec.tokenSecretRef gets (export-token-<name>, at most 63
// characters).
func ExportTokenSecretName(name string) string { return truncateName("export-token-" + name) }

func truncateName(s string) string {
	if len(s) > 63 {
		return s[:63]
	}
	return s
}

func (r *ExportReconciler) condition(t virtkit.ConditionType, s virtkit.ConditionStatus, reason, msg string) virtkit.Condition {
	return virtkit.Condition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: r.o.now()}
}

// setExportCondition replaces the condition of c's type when its status,
// reason or message differ (keeping its transition time otherwise), or
// appends c.
func setExportCondition(conds []virtkit.Condition, c virtkit.Condition) []virtkit.Condition {
	for i := range conds {
		if conds[i].Type == c.Type {
			if conds[i].Status != c.Status || conds[i].Reason != c.Reason || conds[i].Message != c.Message {
				conds[i] = c
			}
			return conds
		}
	}
	return append(conds, c)
}

// pvcCondition is PVCReady: bound when every exported claim is bound,
// pending when one is not, not found when the claim source is missing.
func (r *ExportReconciler) pvcCondition(src *exportSource) virtkit.Condition {
	if src.notFound && len(src.claims) == 0 {
		return r.condition(virtkit.ExportConditionPVCReady, virtkit.ConditionFalse, virtkit.ExportReasonPVCNotFound, "")
	}
	if len(src.claims) == 0 {
		return r.condition(virtkit.ExportConditionPVCReady, virtkit.ConditionFalse, virtkit.ExportReasonUnknown, "")
	}
	for _, dv := range src.claims {
		if !dataVolumeBound(dv) {
			return r.condition(virtkit.ExportConditionPVCReady, virtkit.ConditionFalse, virtkit.ExportReasonPVCPending, "")
		}
	}
	return r.condition(virtkit.ExportConditionPVCReady, virtkit.ConditionTrue, virtkit.ExportReasonPVCBound, "")
}

// token returns the export's token, creating the default token Secret
// when spec.tokenSecretRef names none. A named Secret that does not
// exist, or lacks the token key, is an error wrapping ErrExport.
func (r *ExportReconciler) token(ctx context.Context, exp *virtkit.VirtualMachineExport) ([]byte, error) {
	name := ExportTokenSecretName(exp.Name)
	if exp.Spec.TokenSecretRef != nil {
		name = *exp.Spec.TokenSecretRef
	}
	exp.Status.TokenSecretRef = &name
	sec := &corev1.Secret{}
	found, err := getOptional(ctx, r.o.Store, store.Key{Namespace: exp.Namespace, Name: name}, sec)
	if err != nil {
		return nil, err
	}
	if !found && exp.Spec.TokenSecretRef == nil {
		tok, err := randomToken(exportTokenLength)
		if err != nil {
			return nil, err
		}
		sec = &corev1.Secret{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: exp.Namespace, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: virtkit.ExportSchemeGroupVersion.String(), Kind: virtkit.KindVirtualMachineExport,
				Name: exp.Name, UID: exp.UID, Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true)}}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{virtkit.ExportTokenKey: tok},
		}
		if err := r.o.Store.Create(ctx, sec); err != nil {
			if !errors.Is(err, store.ErrAlreadyExists) {
				return nil, err
			}
			if err := r.o.Store.Get(ctx, store.Key{Namespace: exp.Namespace, Name: name}, sec); err != nil {
				return nil, err
			}
		} else {
			RecordEvent(ctx, r.o.Events, exp, virtkit.EventTypeNormal, EventReasonExportSecretCreated, "Export",
				"Created default secret %s/%s", exp.Namespace, name)
		}
		found = true
	}
	if !found {
		return nil, fmt.Errorf("%w: token secret %s/%s (spec.tokenSecretRef) not found", ErrExport, exp.Namespace, name)
	}
	tok := sec.Data[virtkit.ExportTokenKey]
	if len(tok) == 0 {
		if s, ok := sec.StringData[virtkit.ExportTokenKey]; ok {
			tok = []byte(s)
		}
	}
	if len(tok) == 0 {
		return nil, fmt.Errorf("%w: token secret %s/%s has no %q key", ErrExport, exp.Namespace, name, virtkit.ExportTokenKey)
	}
	return tok, nil
}

// deleteTokenSecret deletes the token Secret the export namespace/name
// created (the Secret it controls), as Kubernetes' garbage collector
// deletes it in a KubeVirt cluster.
func (r *ExportReconciler) deleteTokenSecret(ctx context.Context, namespace, name string) error {
	sec := &corev1.Secret{}
	found, err := getOptional(ctx, r.o.Store, store.Key{Namespace: namespace, Name: ExportTokenSecretName(name)}, sec)
	if err != nil || !found {
		return err
	}
	ref := metav1.GetControllerOf(sec)
	if ref == nil || ref.Kind != virtkit.KindVirtualMachineExport || ref.Name != name {
		return nil
	}
	if err := r.o.Store.Delete(ctx, sec, store.DeleteOptions{}); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return nil
}

// randomToken is n random letters and digits.
func randomToken(n int) ([]byte, error) {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	out := make([]byte, n)
	buf := make([]byte, 1)
	for i := 0; i < n; {
		if _, err := rand.Read(buf); err != nil {
			return nil, err
		}
		// Reject the top of the byte range for an unbiased pick.
		if int(buf[0]) >= 256-256%len(alphabet) {
			continue
		}
		out[i] = alphabet[int(buf[0])%len(alphabet)]
		i++
	}
	return out, nil
}

func dataVolumeBound(dv *virtkit.DataVolume) bool {
	for _, c := range dv.Status.Conditions {
		if c.Type == virtkit.DataVolumeBound {
			return c.Status == virtkit.ConditionTrue
		}
	}
	return false
}
