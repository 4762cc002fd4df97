package virtkit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const snapshotManifest = `
apiVersion: snapshot.kubevirt.io/v1beta1
kind: VirtualMachineSnapshot
metadata:
  name: snap-db
  namespace: default
spec:
  source:
    apiGroup: kubevirt.io
    kind: VirtualMachine
    name: db
  deletionPolicy: Retain
  failureDeadline: 1m
---
apiVersion: snapshot.kubevirt.io/v1beta1
kind: VirtualMachineRestore
metadata:
  name: restore-db
  namespace: default
spec:
  target:
    apiGroup: kubevirt.io
    kind: VirtualMachine
    name: db-copy
  virtualMachineSnapshotName: snap-db
`

func TestSnapshotManifestsDecodeAndValidate(t *testing.T) {
	objs, err := DecodeBytes([]byte(snapshotManifest))
	require.NoError(t, err)
	require.Len(t, objs, 2)
	s, ok := objs[0].(*VirtualMachineSnapshot)
	require.True(t, ok)
	assert.Equal(t, "db", s.Spec.Source.Name)
	assert.Equal(t, time.Minute, s.Spec.FailureDeadline.Duration)
	assert.Equal(t, VirtualMachineSnapshotContentRetain, *s.Spec.DeletionPolicy)
	assert.Empty(t, Validate(s))
	r, ok := objs[1].(*VirtualMachineRestore)
	require.True(t, ok)
	assert.Empty(t, Validate(r))

	_, err = DecodeBytes([]byte("apiVersion: snapshot.kubevirt.io/v1beta1\nkind: VirtualMachineSnapshot\nmetadata: {name: x}\nspec:\n  source: {kind: VirtualMachine, name: a}\n  volumeSnapshotClass: x\n"))
	require.Error(t, err, "a field virtkit does not know is refused by name")
	assert.Contains(t, err.Error(), "volumeSnapshotClass")
}

func TestValidateSnapshot(t *testing.T) {
	base := func() *VirtualMachineSnapshot {
		g := GroupName
		return &VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"},
			Spec: VirtualMachineSnapshotSpec{Source: TypedLocalObjectReference{APIGroup: &g, Kind: KindVirtualMachine, Name: "vm"}}}
	}
	tests := []struct {
		name   string
		mutate func(*VirtualMachineSnapshot)
		want   []wantFieldError
	}{
		{"valid", func(*VirtualMachineSnapshot) {}, nil},
		{"no apiGroup", func(s *VirtualMachineSnapshot) { s.Spec.Source.APIGroup = nil },
			[]wantFieldError{{"spec.source.apiGroup", field.ErrorTypeRequired}}},
		{"other group", func(s *VirtualMachineSnapshot) { g := "apps"; s.Spec.Source.APIGroup = &g },
			[]wantFieldError{{"spec.source.apiGroup", field.ErrorTypeNotSupported}}},
		{"source is not a VM", func(s *VirtualMachineSnapshot) { s.Spec.Source.Kind = "VirtualMachineInstance" },
			[]wantFieldError{{"spec.source.kind", field.ErrorTypeNotSupported}}},
		{"no name", func(s *VirtualMachineSnapshot) { s.Spec.Source.Name = "" },
			[]wantFieldError{{"spec.source.name", field.ErrorTypeRequired}}},
		{"bad deletion policy", func(s *VirtualMachineSnapshot) { p := DeletionPolicy("Keep"); s.Spec.DeletionPolicy = &p },
			[]wantFieldError{{"spec.deletionPolicy", field.ErrorTypeNotSupported}}},
		{"negative deadline", func(s *VirtualMachineSnapshot) { s.Spec.FailureDeadline = &metav1.Duration{Duration: -time.Second} },
			[]wantFieldError{{"spec.failureDeadline", field.ErrorTypeInvalid}}},
		{"zero deadline means none", func(s *VirtualMachineSnapshot) { s.Spec.FailureDeadline = &metav1.Duration{} }, nil},
		{"bad name", func(s *VirtualMachineSnapshot) { s.Name = "Bad_Name" },
			[]wantFieldError{{"metadata.name", field.ErrorTypeInvalid}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base()
			tt.mutate(s)
			assertFieldErrors(t, Validate(s), tt.want)
		})
	}
}

func TestValidateRestore(t *testing.T) {
	base := func() *VirtualMachineRestore {
		g := GroupName
		return &VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "default"},
			Spec: VirtualMachineRestoreSpec{VirtualMachineSnapshotName: "s",
				Target: TypedLocalObjectReference{APIGroup: &g, Kind: KindVirtualMachine, Name: "vm"}}}
	}
	tests := []struct {
		name   string
		mutate func(*VirtualMachineRestore)
		want   []wantFieldError
	}{
		{"valid", func(*VirtualMachineRestore) {}, nil},
		{"target is not a VM", func(r *VirtualMachineRestore) { r.Spec.Target.Kind = "VirtualMachinePool" },
			[]wantFieldError{{"spec.target.kind", field.ErrorTypeNotSupported}}},
		{"no target name", func(r *VirtualMachineRestore) { r.Spec.Target.Name = "" },
			[]wantFieldError{{"spec.target.name", field.ErrorTypeRequired}}},
		{"no snapshot", func(r *VirtualMachineRestore) { r.Spec.VirtualMachineSnapshotName = "" },
			[]wantFieldError{{"spec.virtualMachineSnapshotName", field.ErrorTypeRequired}}},
		{"patches under spec and labels", func(r *VirtualMachineRestore) {
			r.Spec.Patches = []string{`{"op":"replace","path":"/spec/running","value":true}`,
				`{"op": "add", "path": "/metadata/labels/app", "value": "x"}`}
		}, nil},
		{"patch of the name", func(r *VirtualMachineRestore) {
			r.Spec.Patches = []string{`{"op":"replace","path":"/metadata/name","value":"other"}`}
		}, []wantFieldError{{"spec.patches[0].path", field.ErrorTypeInvalid}}},
		{"patch not JSON", func(r *VirtualMachineRestore) { r.Spec.Patches = []string{`op=replace`} },
			[]wantFieldError{{"spec.patches[0]", field.ErrorTypeInvalid}}},
		{"patch with unknown op", func(r *VirtualMachineRestore) {
			r.Spec.Patches = []string{`{"op":"merge","path":"/spec/running","value":true}`}
		}, []wantFieldError{{"spec.patches[0].op", field.ErrorTypeNotSupported}}},
		{"move from the metadata", func(r *VirtualMachineRestore) {
			r.Spec.Patches = []string{`{"op":"move","from":"/metadata/uid","path":"/spec/x"}`}
		}, []wantFieldError{{"spec.patches[0].from", field.ErrorTypeInvalid}}},
		{"replace without value", func(r *VirtualMachineRestore) {
			r.Spec.Patches = []string{`{"op":"replace","path":"/spec/running"}`}
		}, []wantFieldError{{"spec.patches[0].value", field.ErrorTypeRequired}}},
		{"InPlace", func(r *VirtualMachineRestore) { p := VolumeRestorePolicyInPlace; r.Spec.VolumeRestorePolicy = &p }, nil},
		{"RandomizeNames", func(r *VirtualMachineRestore) {
			p := VolumeRestorePolicyRandomizeNames
			r.Spec.VolumeRestorePolicy = &p
		}, nil},
		{"unknown policy", func(r *VirtualMachineRestore) { p := VolumeRestorePolicy("Sometimes"); r.Spec.VolumeRestorePolicy = &p },
			[]wantFieldError{{"spec.volumeRestorePolicy", field.ErrorTypeNotSupported}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := base()
			tt.mutate(r)
			assertFieldErrors(t, Validate(r), tt.want)
		})
	}
}

func TestValidateSnapshotContent(t *testing.T) {
	c := &VirtualMachineSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"},
		Spec: VirtualMachineSnapshotContentSpec{VolumeBackups: []VolumeBackup{
			{VolumeName: "root", PersistentVolumeClaim: PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "a"}}},
			{VolumeName: "root"},
			{PersistentVolumeClaim: PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "b"}}},
		}}}
	assertFieldErrors(t, Validate(c), []wantFieldError{
		{"spec.source.virtualMachine", field.ErrorTypeRequired},
		{"spec.volumeBackups[1].volumeName", field.ErrorTypeDuplicate},
		{"spec.volumeBackups[1].persistentVolumeClaim.metadata.name", field.ErrorTypeRequired},
		{"spec.volumeBackups[2].volumeName", field.ErrorTypeRequired},
	})
}

func TestAdmitRestore(t *testing.T) {
	yes, no := true, false
	ready := &VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Status: &VirtualMachineSnapshotStatus{ReadyToUse: &yes}}
	inProgress := &VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Status: &VirtualMachineSnapshotStatus{Phase: SnapshotInProgress, ReadyToUse: &no}}
	failed := &VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Status: &VirtualMachineSnapshotStatus{Phase: SnapshotFailed, ReadyToUse: &no}}
	vm := func(rs VirtualMachineRunStrategy) *VirtualMachine {
		return &VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm"}, Spec: VirtualMachineSpec{RunStrategy: &rs}}
	}
	r := &VirtualMachineRestore{Spec: VirtualMachineRestoreSpec{VirtualMachineSnapshotName: "s"}}
	tests := []struct {
		name string
		snap *VirtualMachineSnapshot
		vm   *VirtualMachine
		want []wantFieldError
	}{
		{"new VM", ready, nil, nil},
		{"stopped VM", ready, vm(RunStrategyHalted), nil},
		{"running VM", ready, vm(RunStrategyAlways), []wantFieldError{{"spec.target.name", field.ErrorTypeForbidden}}},
		{"running false", ready, &VirtualMachine{Spec: VirtualMachineSpec{Running: &no}}, nil},
		{"running true", ready, &VirtualMachine{Spec: VirtualMachineSpec{Running: &yes}}, []wantFieldError{{"spec.target.name", field.ErrorTypeForbidden}}},
		{"no snapshot", nil, nil, []wantFieldError{{"spec.virtualMachineSnapshotName", field.ErrorTypeNotFound}}},
		{"snapshot in progress: the restore waits", inProgress, nil, nil},
		{"snapshot failed", failed, nil, []wantFieldError{{"spec.virtualMachineSnapshotName", field.ErrorTypeInvalid}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFieldErrors(t, AdmitRestore(r, tt.snap, tt.vm), tt.want)
		})
	}
}

func TestAdmitSnapshotUpdateImmutable(t *testing.T) {
	g := GroupName
	old := &VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"},
		Spec:   VirtualMachineSnapshotSpec{Source: TypedLocalObjectReference{APIGroup: &g, Kind: KindVirtualMachine, Name: "vm"}},
		Status: &VirtualMachineSnapshotStatus{Phase: SnapshotSucceeded}}
	upd := old.DeepCopy()
	upd.Status = nil
	upd.Spec.Source.Name = "other"
	errs := AdmitUpdate(upd, old)
	assertFieldErrors(t, errs, []wantFieldError{{"spec.source.name", field.ErrorTypeForbidden}})
	assert.Equal(t, SnapshotSucceeded, upd.Status.Phase, "an update keeps the status")

	created := old.DeepCopy()
	assert.Empty(t, AdmitCreate(created))
	assert.Nil(t, created.Status, "a user does not write status")
}
