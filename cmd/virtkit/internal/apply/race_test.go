package apply

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube/kubetest"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/manifest"
)

// racingDynamic is a dynamic client whose resources let another client
// create the object just before each create of this one.
type racingDynamic struct {
	dynamic.Interface
	races int
}

func (d *racingDynamic) Resource(r schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return racingResource{NamespaceableResourceInterface: d.Interface.Resource(r), d: d}
}

type racingResource struct {
	dynamic.NamespaceableResourceInterface
	d *racingDynamic
}

func (r racingResource) Namespace(ns string) dynamic.ResourceInterface {
	return racingNamespaced{ResourceInterface: r.NamespaceableResourceInterface.Namespace(ns), d: r.d}
}

type racingNamespaced struct {
	dynamic.ResourceInterface
	d *racingDynamic
}

func (r racingNamespaced) Create(ctx context.Context, obj *unstructured.Unstructured, opts metav1.CreateOptions, sub ...string) (*unstructured.Unstructured, error) {
	if r.d.races > 0 {
		r.d.races--
		other := obj.DeepCopy()
		unstructured.RemoveNestedField(other.Object, "metadata", "annotations")
		if _, err := r.ResourceInterface.Create(ctx, other, opts); err != nil {
			return nil, err
		}
	}
	return r.ResourceInterface.Create(ctx, obj, opts, sub...)
}

// An apply that loses the create to another client reads the object
// again and patches it, as concurrent appliers of one manifest expect.
func TestRunCreateRace(t *testing.T) {
	api := kubetest.Serve(t, kubetest.NewMemory(t))
	racing := &racingDynamic{Interface: api.Dynamic, races: 1}
	api.Dynamic = racing
	objs, err := manifest.Read(strings.NewReader(vm), []string{"-"})
	require.NoError(t, err)
	var out, errOut bytes.Buffer
	o := &Options{Out: &out, ErrOut: &errOut, Files: []string{"-"}, Namespace: "default", API: api, Objects: objs}
	require.NoError(t, o.Complete(nil))
	require.NoError(t, o.Validate())
	require.NoError(t, o.Run(t.Context()), errOut.String())
	assert.Equal(t, 0, racing.races, "the other client created the object first")
	assert.Equal(t, "virtualmachine.kubevirt.io/web configured\n", out.String())
}
