package cluster

import (
	"context"
	"fmt"
	"io"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cdi/importer"
	"github.com/virtkit/virtkit/cdi/upload"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

var _ upload.Receiver = (*Cluster)(nil)

// ReceiveUpload takes an upload to DataVolume namespace/name (CDI's upload
// proxy path, see cdi/upload): the DataVolume must be UploadReady, and its
// node one of this process's, whose import worker writes the volume
// (importer.Worker.ReceiveUpload).
func (c *Cluster) ReceiveUpload(ctx context.Context, namespace, name string, body io.Reader) (func(context.Context) error, error) {
	if c.storage == nil {
		return nil, fmt.Errorf("%w: this cluster has no storage", importer.ErrNotUploadReady)
	}
	dv := &virtkit.DataVolume{}
	if err := c.opts.Store.Get(ctx, store.Key{Namespace: namespace, Name: name}, dv); err != nil {
		return nil, fmt.Errorf("%w: datavolume %s/%s: %w", importer.ErrNotUploadReady, namespace, name, err)
	}
	n := dv.Annotations[virtkit.DataVolumeImportNodeAnnotation]
	if n == "" {
		return nil, fmt.Errorf("%w: datavolume %s/%s is not scheduled on a node yet", importer.ErrNotUploadReady, namespace, name)
	}
	w, ok := c.storage.workers.Load(n)
	if !ok {
		return nil, fmt.Errorf("%w: datavolume %s/%s is on node %s: %w", importer.ErrNotUploadReady, namespace, name, n, upload.ErrElsewhere)
	}
	return w.(*importer.Worker).ReceiveUpload(ctx, namespace, name, body)
}

// uploadLocator finds the upload server of a DataVolume's node: the
// endpoint its node agent publishes (node.EndpointAnnotation), which
// serves the forwarded uploads.
type uploadLocator struct{ st store.Store }

var _ upload.Locator = uploadLocator{}

// LocateUpload implements upload.Locator.
func (l uploadLocator) LocateUpload(ctx context.Context, namespace, name string) (string, error) {
	dv := &virtkit.DataVolume{}
	if err := l.st.Get(ctx, store.Key{Namespace: namespace, Name: name}, dv); err != nil {
		return "", fmt.Errorf("%w: datavolume %s/%s: %w", importer.ErrNotUploadReady, namespace, name, err)
	}
	n := dv.Annotations[virtkit.DataVolumeImportNodeAnnotation]
	if n == "" {
		return "", fmt.Errorf("%w: datavolume %s/%s is not scheduled on a node yet", importer.ErrNotUploadReady, namespace, name)
	}
	nd := &virtkit.Node{}
	if err := l.st.Get(ctx, store.Key{Name: n}, nd); err != nil {
		return "", fmt.Errorf("%w: datavolume %s/%s: node %s: %w", importer.ErrNotUploadReady, namespace, name, n, err)
	}
	u := nd.Annotations[node.EndpointAnnotation]
	if u == "" {
		return "", fmt.Errorf("%w: datavolume %s/%s: node %s publishes no endpoint (annotation %s) to take its uploads",
			importer.ErrNotUploadReady, namespace, name, n, node.EndpointAnnotation)
	}
	return u, nil
}
