package virtctl

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube"
)

// migrate-cancel deletes a migration it can still abort, and says why
// when it cannot: the source has finished (the guest is on the target, or
// the job failed).
func TestMigrateCancelSaysWhyItCannot(t *testing.T) {
	mig := func(name string, state map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceMigration",
			"metadata": map[string]any{"name": name, "namespace": "default"},
			"spec":     map[string]any{"vmiName": "vm"},
			"status":   map[string]any{"phase": "Running", "migrationState": state},
		}}
		return u
	}
	tests := []struct {
		name    string
		state   map[string]any
		wantErr string
	}{
		{name: "copying", state: map[string]any{"startTimestamp": "2026-12-03T09:00:00Z"}},
		{name: "switched over", state: map[string]any{"endTimestamp": "2026-12-03T09:00:30Z"}, wantErr: "moved to the target node"},
		{name: "failed", state: map[string]any{"endTimestamp": "2026-12-03T09:00:30Z", "failed": true}, wantErr: "already failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{MigrationsGVR: "VirtualMachineInstanceMigrationList"}, mig("m1", tt.state))
			c := &kube.Client{Dynamic: dyn, Namespace: "default"}
			name, err := CancelMigration(t.Context(), c, "vm")
			_, getErr := dyn.Resource(MigrationsGVR).Namespace("default").Get(t.Context(), "m1", metav1.GetOptions{})
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				assert.NoError(t, getErr, "not deleted")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "m1", name)
			assert.True(t, apierrors.IsNotFound(getErr), "deleted")
		})
	}
}
