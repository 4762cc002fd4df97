package describe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube"
)

// eventsGVR is where the API serves events.
var eventsGVR = schema.GroupVersionResource{Group: virtkit.EventsGroupName, Version: "v1", Resource: "events"}

// maxDescribeEvents bounds the events describe reads for one object.
const maxDescribeEvents = 500

// ErrNoTransport: Run was called without an API client.
var ErrNoTransport = errors.New("describe: Options.API is not set")

// Options are the describe command's: KIND [NAME...] or KIND -l SELECTOR.
// Main sets the flags' fields and, once connected, API and Namespace;
// Complete, Validate and Run do the rest.
type Options struct {
	// Out receives the descriptions; ErrOut the note that nothing matched.
	Out, ErrOut io.Writer
	// Kind and Names are what the user typed (Complete sets them); no
	// names describes every object of the kind the selector picks.
	Kind  string
	Names []string
	// Selector selects by label (-l).
	Selector string
	// Namespace of the objects (main sets the context's unless -n was
	// given).
	Namespace string
	// API is the connection to the API server.
	API *kube.Client
	// Now is when ages are computed; nil is time.Now.
	Now func() time.Time
}

// Complete takes KIND [NAME...] from args.
func (o *Options) Complete(args []string) error {
	if len(args) < 1 {
		return fmt.Errorf("requires at least 1 arg(s), only received %d", len(args))
	}
	o.Kind, o.Names = args[0], args[1:]
	if o.Now == nil {
		o.Now = time.Now
	}
	return nil
}

// Validate checks the combination of names and selector.
func (o *Options) Validate() error {
	if o.Selector != "" && len(o.Names) > 0 {
		return errors.New("name cannot be provided when a selector is specified")
	}
	return nil
}

// Run describes the named objects of the kind, or without names those the
// label selector picks, a blank line between two.
func (o *Options) Run(ctx context.Context) error {
	c := o.API
	if c == nil {
		return ErrNoTransport
	}
	w, errOut, names, now := o.Out, o.ErrOut, o.Names, o.Now()
	m, err := c.Mapping(o.Kind)
	if err != nil {
		return err
	}
	ri := c.ResourceFor(m, o.Namespace)
	var objs []*unstructured.Unstructured
	if len(names) == 0 {
		list, err := ri.List(ctx, metav1.ListOptions{LabelSelector: o.Selector})
		if err != nil {
			return err
		}
		if len(list.Items) == 0 {
			// As kubectl: a note on standard error, not a failure.
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				fmt.Fprintf(errOut, "No resources found in %s namespace.\n", esc(o.Namespace))
			} else {
				fmt.Fprintln(errOut, "No resources found")
			}
			return nil
		}
		for i := range list.Items {
			objs = append(objs, &list.Items[i])
		}
	}
	for _, name := range names {
		obj, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		objs = append(objs, obj)
	}
	for i, obj := range objs {
		evs, err := eventsRegarding(ctx, c, obj)
		if err != nil {
			return err
		}
		if i > 0 {
			fmt.Fprintln(w)
		}
		Object(w, obj, evs, now)
	}
	return nil
}

// eventsRegarding lists the events that regard obj (by kind, name and
// UID), at most maxDescribeEvents. A user who may not read events gets the
// object without them, as kubectl describe does.
func eventsRegarding(ctx context.Context, c *kube.Client, obj *unstructured.Unstructured) ([]virtkit.Event, error) {
	m, err := c.Mapper.RESTMapping(schema.GroupKind{Group: eventsGVR.Group, Kind: virtkit.KindEvent}, eventsGVR.Version)
	if err != nil {
		return nil, nil // the server serves no events
	}
	sel := fields.Set{"regarding.kind": obj.GetKind(), "regarding.name": obj.GetName()}
	if uid := obj.GetUID(); uid != "" {
		sel["regarding.uid"] = string(uid)
	}
	list, err := c.ResourceFor(m, obj.GetNamespace()).List(ctx, metav1.ListOptions{
		Limit: maxDescribeEvents, FieldSelector: sel.AsSelector().String(),
	})
	if err != nil {
		return nil, nil
	}
	var out []virtkit.Event
	for _, it := range list.Items {
		data, err := json.Marshal(it.Object)
		if err != nil {
			continue
		}
		var e virtkit.Event
		if json.Unmarshal(data, &e) != nil {
			continue
		}
		out = append(out, e)
	}
	return out, nil
}
