package get

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/jsonpath"

	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/term"
	"github.com/virtkit/virtkit/printers"
)

// maxWatchEvent bounds one watch event get prints.
const maxWatchEvent = 8 << 20

// tableAccept asks for a server-side meta.k8s.io Table, as kubectl does.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

// runAPI prints through the API: the server's Table for the default and
// wide outputs, the objects otherwise, then with Watch their changes.
func (o *Options) runAPI(ctx context.Context) error {
	c, w := o.API, o.Out
	m, err := c.Mapping(o.Kind)
	if err != nil {
		return err
	}
	ns := o.Namespace
	if o.AllNamespaces || m.Scope.Name() != meta.RESTScopeNameNamespace {
		ns = ""
	}
	if o.Output == "" || o.Output == "wide" {
		return o.table(ctx, m, ns)
	}
	ri := c.ResourceFor(m, ns)
	var content any
	var rv string
	var items []unstructured.Unstructured
	if o.Name != "" {
		obj, err := ri.Get(ctx, o.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		content, rv, items = obj.UnstructuredContent(), obj.GetResourceVersion(), []unstructured.Unstructured{*obj}
	} else {
		list, err := ri.List(ctx, metav1.ListOptions{LabelSelector: o.Selector})
		if err != nil {
			return err
		}
		items = append(items, list.Items...)
		rv = list.GetResourceVersion()
		l := map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": rv}, "items": []any{}}
		var its []any
		for _, it := range list.Items {
			its = append(its, it.UnstructuredContent())
		}
		if its != nil {
			l["items"] = its
		}
		content = l
		if len(items) == 0 && o.Output == "name" && !o.Watch {
			return nil
		}
	}
	if o.Output == "name" {
		for _, it := range items {
			fmt.Fprintf(w, "%s/%s\n", kube.KindRef(m.GroupVersionKind.GroupKind()), term.Esc(it.GetName()))
		}
	} else if err := printObject(w, o.Output, content); err != nil {
		return err
	}
	if !o.Watch {
		return nil
	}
	opts := metav1.ListOptions{LabelSelector: o.Selector, ResourceVersion: rv}
	if o.Name != "" {
		opts.FieldSelector = "metadata.name=" + o.Name
	}
	wi, err := ri.Watch(ctx, opts)
	if err != nil {
		return err
	}
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return nil
			}
			if ev.Type == watch.Error {
				return apierrors.FromObject(ev.Object)
			}
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || ev.Type == watch.Bookmark {
				continue
			}
			if o.Output == "name" {
				fmt.Fprintf(w, "%s/%s\n", kube.KindRef(m.GroupVersionKind.GroupKind()), term.Esc(u.GetName()))
			} else if err := printObject(w, o.Output, u.UnstructuredContent()); err != nil {
				return err
			}
		}
	}
}

// printObject writes v as json, yaml or through a jsonpath template.
func printObject(w io.Writer, output string, v any) error {
	switch {
	case output == "json":
		data, err := json.MarshalIndent(v, "", "    ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(term.EscapeJSON(data), '\n'))
		return err
	case output == "yaml":
		data, err := term.YAML(v)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	tmpl := strings.TrimPrefix(output, "jsonpath=")
	jp := jsonpath.New("output")
	if err := jp.Parse(tmpl); err != nil {
		return fmt.Errorf("error parsing jsonpath %s: %w", tmpl, err)
	}
	var b strings.Builder
	if err := jp.Execute(&b, v); err != nil {
		return fmt.Errorf("jsonpath %s: %w", tmpl, err)
	}
	_, err := io.WriteString(w, term.Esc(b.String()))
	return err
}

// table prints the server's Table (kubectl's default and wide output),
// then, with -w, the rows of the watch's Table events.
func (o *Options) table(ctx context.Context, m *meta.RESTMapping, ns string) error {
	c, w := o.API, o.Out
	path := kube.ResourcePath(m, ns, o.Name)
	req := c.REST.Get().AbsPath(path).SetHeader("Accept", tableAccept).Param("includeObject", "Metadata")
	if o.Selector != "" {
		req = req.Param("labelSelector", o.Selector)
	}
	raw, err := kube.DoRaw(ctx, req)
	if err != nil {
		return err
	}
	var t metav1.Table
	if err := json.Unmarshal(raw, &t); err != nil {
		return fmt.Errorf("decode the server's table: %w", err)
	}
	p := printers.Printer{W: w, Wide: o.Output == "wide", WithNamespace: o.AllNamespaces && m.Scope.Name() == meta.RESTScopeNameNamespace, Escape: term.Esc}
	if len(t.Rows) == 0 && !o.Watch {
		if ns != "" {
			fmt.Fprintf(w, "No resources found in %s namespace.\n", term.Esc(ns))
		} else {
			fmt.Fprintln(w, "No resources found")
		}
		return nil
	}
	if err := p.Print(&t); err != nil {
		return err
	}
	if !o.Watch {
		return nil
	}
	wpath := kube.ResourcePath(m, ns, "")
	wreq := c.REST.Get().AbsPath(wpath).SetHeader("Accept", tableAccept).Param("includeObject", "Metadata").
		Param("watch", "true").Param("resourceVersion", t.ResourceVersion)
	if o.Selector != "" {
		wreq = wreq.Param("labelSelector", o.Selector)
	}
	if o.Name != "" {
		wreq = wreq.Param("fieldSelector", "metadata.name="+o.Name)
	}
	stream, err := wreq.Stream(ctx)
	if err != nil {
		return err
	}
	defer stream.Close()
	dec := json.NewDecoder(stream)
	for {
		var ev struct {
			Type   watch.EventType `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := dec.Decode(&ev); err != nil {
			if ctx.Err() != nil || errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("watch: %w", err)
		}
		if len(ev.Object) > maxWatchEvent {
			return fmt.Errorf("watch: event larger than %d bytes", maxWatchEvent)
		}
		switch ev.Type {
		case watch.Error:
			var st metav1.Status
			if err := json.Unmarshal(ev.Object, &st); err != nil {
				return fmt.Errorf("watch: %w", err)
			}
			return &apierrors.StatusError{ErrStatus: st}
		case watch.Bookmark:
			continue
		}
		var et metav1.Table
		if err := json.Unmarshal(ev.Object, &et); err != nil {
			return fmt.Errorf("watch: decode table: %w", err)
		}
		if err := p.Print(&et); err != nil {
			return err
		}
	}
}
