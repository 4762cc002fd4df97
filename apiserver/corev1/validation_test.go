package corev1

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/virtkit/virtkit"
)

func TestValidateConfigMap(t *testing.T) {
	meta := metav1.ObjectMeta{Namespace: "default", Name: "cfg"}
	tests := []struct {
		name string
		cm   corev1.ConfigMap
		want []string
	}{
		{name: "valid", cm: corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"a.txt": "x", "b-c_d": "y"}}, want: []string{}},
		{name: "bad name", cm: corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "Bad_Name"}}, want: []string{"metadata.name"}},
		{name: "no namespace", cm: corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}}, want: []string{"metadata.namespace"}},
		{name: "bad key", cm: corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"a/b": "x"}}, want: []string{"data[a/b]"}},
		{name: "key in both maps", cm: corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": "x"}, BinaryData: map[string][]byte{"k": {1}}},
			want: []string{"binaryData[k]"}},
		{name: "too large", cm: corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": strings.Repeat("x", maxDataBytes)}}, want: []string{"data"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateConfigMap(&tt.cm)
			got := []string{}
			for _, e := range errs {
				got = append(got, e.Field)
			}
			assert.Equal(t, tt.want, got, errs.ToAggregate())
		})
	}
}

func TestValidateSecret(t *testing.T) {
	meta := metav1.ObjectMeta{Namespace: "default", Name: "s", ResourceVersion: "1"}
	yes := true
	tests := []struct {
		name string
		s    corev1.Secret
		old  *corev1.Secret
		want []string
	}{
		{name: "opaque", s: corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"k": {1}}}, want: []string{}},
		{name: "bad key", s: corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"a b": {1}}}, want: []string{"data[a b]"}},
		{name: "too large", s: corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"k": make([]byte, maxDataBytes+1)}}, want: []string{"data"}},
		{name: "tls without key", s: corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": {1}}},
			want: []string{"data[tls.key]"}},
		{name: "dockerconfigjson", s: corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeDockerConfigJson}, want: []string{"data[.dockerconfigjson]"}},
		{name: "service account token", s: corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeServiceAccountToken},
			want: []string{"metadata.annotations[kubernetes.io/service-account.name]"}},
		{name: "type change", s: corev1.Secret{ObjectMeta: meta, Type: "example.com/x"}, old: &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeOpaque},
			want: []string{"type"}},
		{name: "immutable data", s: corev1.Secret{ObjectMeta: meta, Immutable: &yes, Data: map[string][]byte{"k": {2}}},
			old: &corev1.Secret{ObjectMeta: meta, Immutable: &yes, Data: map[string][]byte{"k": {1}}}, want: []string{"data"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateSecret(&tt.s)
			if tt.old != nil {
				errs = ValidateSecretUpdate(&tt.s, tt.old)
			}
			got := []string{}
			for _, e := range errs {
				got = append(got, e.Field)
			}
			assert.Equal(t, tt.want, got, errs.ToAggregate())
		})
	}
}

func TestNamespaceStrategies(t *testing.T) {
	ctx := context.Background()
	k := namespaces()
	created := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
	k.PrepareForCreate(ctx, created)
	assert.Equal(t, corev1.NamespaceActive, created.Status.Phase)
	assert.Equal(t, []corev1.FinalizerName{corev1.FinalizerKubernetes}, created.Spec.Finalizers)
	assert.Equal(t, []string{virtkit.NamespaceFinalizer}, created.Finalizers)
	assert.Empty(t, k.Validate(ctx, created))
	assert.Equal(t, "metadata.name", k.Validate(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a.b"}})[0].Field)

	tests := []struct {
		name     string
		strategy strategy
		change   func(ns *corev1.Namespace)
		check    func(t *testing.T, ns *corev1.Namespace)
		invalid  string
	}{
		{name: "update keeps spec.finalizers, status and the store finalizer", strategy: k.strategy,
			change: func(ns *corev1.Namespace) {
				ns.Spec.Finalizers, ns.Finalizers = nil, nil
				ns.Status.Phase = corev1.NamespaceTerminating
				ns.Labels = map[string]string{"a": "b"}
			},
			check: func(t *testing.T, ns *corev1.Namespace) {
				assert.Equal(t, []corev1.FinalizerName{corev1.FinalizerKubernetes}, ns.Spec.Finalizers)
				assert.Equal(t, []string{virtkit.NamespaceFinalizer}, ns.Finalizers)
				assert.Equal(t, corev1.NamespaceActive, ns.Status.Phase)
				assert.Equal(t, map[string]string{"a": "b", namespaceNameLabel: "team"}, ns.Labels)
			}},
		{name: "status keeps spec", strategy: namespaceStatus(k.strategy),
			change: func(ns *corev1.Namespace) { ns.Spec.Finalizers = nil },
			check: func(t *testing.T, ns *corev1.Namespace) {
				assert.Equal(t, []corev1.FinalizerName{corev1.FinalizerKubernetes}, ns.Spec.Finalizers)
			}},
		{name: "status Terminating needs a deletion", strategy: namespaceStatus(k.strategy),
			change:  func(ns *corev1.Namespace) { ns.Status.Phase = corev1.NamespaceTerminating },
			invalid: "status.phase"},
		{name: "finalize empties spec.finalizers and releases the store finalizer", strategy: namespaceFinalize(k.strategy),
			change: func(ns *corev1.Namespace) { ns.Spec.Finalizers = nil; ns.Labels = map[string]string{"ignored": "x"} },
			check: func(t *testing.T, ns *corev1.Namespace) {
				assert.Empty(t, ns.Spec.Finalizers)
				assert.Empty(t, ns.Finalizers)
				assert.NotContains(t, ns.Labels, "ignored")
			}},
		{name: "finalize keeps the store finalizer while another remains", strategy: namespaceFinalize(k.strategy),
			change: func(ns *corev1.Namespace) { ns.Spec.Finalizers = []corev1.FinalizerName{"example.com/x"} },
			check: func(t *testing.T, ns *corev1.Namespace) {
				assert.Equal(t, []string{virtkit.NamespaceFinalizer}, ns.Finalizers)
			}},
		{name: "finalize refuses an unqualified finalizer", strategy: namespaceFinalize(k.strategy),
			change:  func(ns *corev1.Namespace) { ns.Spec.Finalizers = []corev1.FinalizerName{"bare"} },
			invalid: "spec.finalizers[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := created.DeepCopy()
			old.ResourceVersion = "5"
			ns := old.DeepCopy()
			tt.change(ns)
			tt.strategy.PrepareForUpdate(ctx, ns, old)
			errs := tt.strategy.ValidateUpdate(ctx, ns, old)
			if tt.invalid != "" {
				require.NotEmpty(t, errs)
				assert.Equal(t, tt.invalid, errs[0].Field)
				return
			}
			require.Empty(t, errs)
			tt.check(t, ns)
		})
	}
}

func TestSecretStrategy(t *testing.T) {
	ctx := context.Background()
	k := secrets()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "s"}, StringData: map[string]string{"user": "me"}}
	k.PrepareForCreate(ctx, s)
	assert.Equal(t, corev1.SecretTypeOpaque, s.Type)
	assert.Equal(t, map[string][]byte{"user": []byte("me")}, s.Data)
	assert.Nil(t, s.StringData)
}

func TestNodeUpdate(t *testing.T) {
	src := &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: virtkit.NodeSpec{Unschedulable: true,
		Taints: []virtkit.Taint{{Key: virtkit.DrainTaintKey, Effect: virtkit.TaintEffectNoSchedule}, {Key: "k", Effect: virtkit.TaintEffectNoExecute}}}}
	tests := []struct {
		name        string
		change      func(n *corev1.Node)
		invalid     string
		wantCordon  bool
		wantTaints  []string
		wantLabelOK bool
	}{
		{name: "label", change: func(n *corev1.Node) { n.Labels = map[string]string{"a": "b"} }, wantCordon: true,
			wantTaints: []string{virtkit.DrainTaintKey, "k"}, wantLabelOK: true},
		{name: "uncordon ends a drain", change: func(n *corev1.Node) { n.Spec.Unschedulable = false }, wantTaints: []string{"k"}},
		{name: "podCIDR is refused", change: func(n *corev1.Node) { n.Spec.PodCIDR = "10.0.0.0/24" }, invalid: "spec"},
		{name: "taint without effect", change: func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "x"}) },
			invalid: "spec.taints[2].effect"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := CoreNode(src)
			n := old.DeepCopy()
			tt.change(n)
			errs := validateNodeUpdate(n, old)
			if tt.invalid != "" {
				require.NotEmpty(t, errs)
				assert.Equal(t, tt.invalid, errs[0].Field)
				return
			}
			require.Empty(t, errs)
			out := src.DeepCopy()
			applyNode(out, n)
			assert.Equal(t, tt.wantCordon, out.Spec.Unschedulable)
			var keys []string
			for _, tn := range out.Spec.Taints {
				keys = append(keys, tn.Key)
			}
			assert.Equal(t, tt.wantTaints, keys)
			assert.Equal(t, tt.wantLabelOK, out.Labels["a"] == "b")
		})
	}
}

func TestClaim(t *testing.T) {
	dv := &virtkit.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "disk", UID: "u1"}}
	assert.Equal(t, corev1.ClaimPending, Claim(dv).Status.Phase)
	dv.Status.Conditions = []virtkit.DataVolumeCondition{{Type: virtkit.DataVolumeBound, Status: virtkit.ConditionTrue}}
	c := Claim(dv)
	assert.Equal(t, corev1.ClaimBound, c.Status.Phase)
	assert.Equal(t, "disk", c.Name)
	assert.Equal(t, "pvc-u1", c.Spec.VolumeName)
	require.Len(t, c.OwnerReferences, 1)
	assert.Equal(t, virtkit.KindDataVolume, c.OwnerReferences[0].Kind)
	assert.NotContains(t, c.Annotations, AnnUploadTarget)

	// CDI's annotations, which virtctl image-upload waits on.
	dv.Spec.Source = &virtkit.DataVolumeImportSource{Upload: &virtkit.DataVolumeSourceUpload{}}
	for _, tt := range []struct {
		phase      virtkit.DataVolumePhase
		pod, ready string
	}{
		{virtkit.DataVolumePending, "", ""},
		{virtkit.DataVolumeUploadReady, "Running", "true"},
		{virtkit.DataVolumeSucceeded, "Succeeded", "false"},
		{virtkit.DataVolumeFailed, "Failed", "false"},
	} {
		dv.Status.Phase = tt.phase
		c := Claim(dv)
		assert.Contains(t, c.Annotations, AnnUploadTarget)
		assert.Equal(t, tt.pod, c.Annotations[AnnPodPhase], tt.phase)
		assert.Equal(t, tt.ready, c.Annotations[AnnPodReady], tt.phase)
	}
}

func TestSchemeFieldLabels(t *testing.T) {
	s, err := NewScheme()
	require.NoError(t, err)
	for _, tt := range []struct {
		kind, label string
		ok          bool
	}{
		{"Event", "involvedObject.name", true},
		{"Event", "source", true},
		{"Event", "spec.x", false},
		{"Pod", "spec.nodeName", true},
		{"Secret", "type", true},
		{"Namespace", "status.phase", true},
		{"ConfigMap", "data", false},
	} {
		_, _, err := s.ConvertFieldLabel(GroupVersion.WithKind(tt.kind), tt.label, "x")
		assert.Equal(t, tt.ok, err == nil, "%s %s: %v", tt.kind, tt.label, err)
	}
	// The internal version is the v1 types themselves.
	obj, err := s.New(internalVersion.WithKind("ConfigMap"))
	require.NoError(t, err)
	_, ok := obj.(*corev1.ConfigMap)
	assert.True(t, ok)
	var _ runtime.Object = obj
}
