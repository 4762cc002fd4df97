package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/jsonpath"

	"github.com/virtkit/virtkit/printers"
)

// maxWatchEvent bounds one watch event the CLI prints.
const maxWatchEvent = 8 << 20

// tableAccept asks for a server-side meta.k8s.io Table, as kubectl does.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

// getAPIOptions are get's flags for the API path.
type getAPIOptions struct {
	typed, name string
	namespace   string // the context's or -n's
	all         bool
	output      string // "" (table), wide, name, json, yaml, jsonpath=...
	selector    string
	watch       bool
}

// parseOutput checks -o for the API path.
func parseOutput(o string) (string, error) {
	switch {
	case o == "" || o == "table" || o == "wide" || o == "name" || o == "json" || o == "yaml":
		if o == "table" {
			return "", nil
		}
		return o, nil
	case strings.HasPrefix(o, "jsonpath="):
		return o, nil
	}
	return "", fmt.Errorf("--output: unable to match a printer suitable for the output format %q, allowed formats are: json,jsonpath,name,wide,yaml", o)
}

func runGetAPI(ctx context.Context, c *apiClient, w io.Writer, o getAPIOptions) error {
	m, err := c.mapping(o.typed)
	if err != nil {
		return err
	}
	ns := o.namespace
	if o.all || m.Scope.Name() != meta.RESTScopeNameNamespace {
		ns = ""
	}
	if o.output == "" || o.output == "wide" {
		return getTable(ctx, c, w, m, ns, o)
	}
	ri := c.resourceFor(m, ns)
	var content any
	var rv string
	var items []unstructured.Unstructured
	if o.name != "" {
		obj, err := ri.Get(ctx, o.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		content, rv, items = obj.UnstructuredContent(), obj.GetResourceVersion(), []unstructured.Unstructured{*obj}
	} else {
		list, err := ri.List(ctx, metav1.ListOptions{LabelSelector: o.selector})
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
		if len(items) == 0 && o.output == "name" && !o.watch {
			return nil
		}
	}
	if o.output == "name" {
		for _, it := range items {
			fmt.Fprintf(w, "%s/%s\n", kindRef(m.GroupVersionKind.GroupKind()), esc(it.GetName()))
		}
	} else if err := printObject(w, o.output, content); err != nil {
		return err
	}
	if !o.watch {
		return nil
	}
	opts := metav1.ListOptions{LabelSelector: o.selector, ResourceVersion: rv}
	if o.name != "" {
		opts.FieldSelector = "metadata.name=" + o.name
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
			if o.output == "name" {
				fmt.Fprintf(w, "%s/%s\n", kindRef(m.GroupVersionKind.GroupKind()), esc(u.GetName()))
			} else if err := printObject(w, o.output, u.UnstructuredContent()); err != nil {
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
		_, err = w.Write(append(escapeJSON(data), '\n'))
		return err
	case output == "yaml":
		data, err := yamlOut(v)
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
	_, err := io.WriteString(w, esc(b.String()))
	return err
}

// getTable prints the server's Table (kubectl's default and wide output),
// then, with -w, the rows of the watch's Table events.
func getTable(ctx context.Context, c *apiClient, w io.Writer, m *meta.RESTMapping, ns string, o getAPIOptions) error {
	path := resourcePath(m, ns, o.name)
	req := c.rest.Get().AbsPath(path).SetHeader("Accept", tableAccept).Param("includeObject", "Metadata")
	if o.selector != "" {
		req = req.Param("labelSelector", o.selector)
	}
	raw, err := doRaw(ctx, req)
	if err != nil {
		return err
	}
	var t metav1.Table
	if err := json.Unmarshal(raw, &t); err != nil {
		return fmt.Errorf("decode the server's table: %w", err)
	}
	p := printers.Printer{W: w, Wide: o.output == "wide", WithNamespace: o.all && m.Scope.Name() == meta.RESTScopeNameNamespace, Escape: esc}
	if len(t.Rows) == 0 && !o.watch {
		if ns != "" {
			fmt.Fprintf(w, "No resources found in %s namespace.\n", esc(ns))
		} else {
			fmt.Fprintln(w, "No resources found")
		}
		return nil
	}
	if err := p.Print(&t); err != nil {
		return err
	}
	if !o.watch {
		return nil
	}
	wpath := resourcePath(m, ns, "")
	wreq := c.rest.Get().AbsPath(wpath).SetHeader("Accept", tableAccept).Param("includeObject", "Metadata").
		Param("watch", "true").Param("resourceVersion", t.ResourceVersion)
	if o.selector != "" {
		wreq = wreq.Param("labelSelector", o.selector)
	}
	if o.name != "" {
		wreq = wreq.Param("fieldSelector", "metadata.name="+o.name)
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

// resourcePath is the REST path of a resource (and object).
func resourcePath(m *meta.RESTMapping, ns, name string) string {
	gv := m.Resource.GroupVersion()
	p := "/apis/" + gv.Group + "/" + gv.Version
	if gv.Group == "" {
		p = "/api/" + gv.Version
	}
	if ns != "" && m.Scope.Name() == meta.RESTScopeNameNamespace {
		p += "/namespaces/" + ns
	}
	p += "/" + m.Resource.Resource
	if name != "" {
		p += "/" + name
	}
	return p
}

// getAPICmd wires get's flags to runGetAPI.
func getAPICmd(cmd *cobra.Command, kf *kubeFlags, args []string, all bool, output, selector string, watchFlag bool) error {
	out, err := parseOutput(output)
	if err != nil {
		return apiFail(cmd, err)
	}
	c, err := kf.connect(cmd)
	if err != nil {
		return apiFail(cmd, err)
	}
	o := getAPIOptions{typed: args[0], namespace: c.namespace, all: all, output: out, selector: selector, watch: watchFlag}
	if len(args) == 2 {
		o.name = args[1]
	}
	if o.name != "" && all {
		return apiFail(cmd, errors.New("a resource cannot be retrieved by name across all namespaces"))
	}
	return apiFail(cmd, runGetAPI(cmd.Context(), c, cmd.OutOrStdout(), o))
}
