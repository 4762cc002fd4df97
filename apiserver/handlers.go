package apiserver

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/admission"
	"github.com/virtkit/virtkit/store"
)

func (s *Server) key(info *requestInfo) store.Key {
	return store.Key{Namespace: info.namespace, Name: info.name}
}

func (s *Server) get(w http.ResponseWriter, r *http.Request, info *requestInfo) {
	obj := info.res.newObject()
	if err := s.opts.Store.Get(r.Context(), s.key(info), obj); err != nil {
		s.writeError(w, r, storeError(info.res, info.name, err))
		return
	}
	s.respondObject(w, r, http.StatusOK, info.res, obj)
}

// respondObject writes obj, as a one-row Table or PartialObjectMetadata
// when the client asked for that.
func (s *Server) respondObject(w http.ResponseWriter, r *http.Request, code int, res *resource, obj virtkit.Object) {
	switch {
	case wantsTable(r):
		t, err := s.table(r, res, []virtkit.Object{obj}, true)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		t.ResourceVersion = obj.GetResourceVersion()
		s.writeObject(w, r, code, t)
	case wantsMetadata(r):
		s.writeObject(w, r, code, partialMetadata(obj))
	default:
		s.writeObject(w, r, code, res.out(obj))
	}
}

func partialMetadata(obj virtkit.Object) *metav1.PartialObjectMetadata {
	m, _ := meta.Accessor(obj)
	om := metav1.ObjectMeta{}
	if acc, ok := m.(metav1.ObjectMetaAccessor); ok {
		om = *acc.GetObjectMeta().(*metav1.ObjectMeta).DeepCopy()
	}
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
		ObjectMeta: om,
	}
}

func (s *Server) table(r *http.Request, res *resource, objs []virtkit.Object, withColumns bool) (*metav1.Table, error) {
	include := r.URL.Query().Get("includeObject")
	cols := res.columns
	if cols == nil {
		cols = columnsOf(res.gvk.Kind)
	}
	t := tableOf(cols, objs, include, s.opts.Now(), withColumns)
	for i := range t.Rows {
		if t.Rows[i].Object.Object == nil {
			continue
		}
		o := t.Rows[i].Object.Object
		if _, meta := o.(*metav1.PartialObjectMetadata); !meta {
			if vo, ok := o.(virtkit.Object); ok {
				o = res.out(vo)
			}
		}
		raw, err := s.encodeRaw(o)
		if err != nil {
			return nil, err
		}
		t.Rows[i].Object = raw
	}
	return t, nil
}

// continueToken is the opaque position of a paged list.
type continueToken struct {
	RV        string `json:"rv"`
	Namespace string `json:"ns,omitempty"`
	Name      string `json:"name"`
}

// selectors parses the label and field selectors of a request.
func (s *Server) selectors(r *http.Request, res *resource) (labels.Selector, fields.Selector, error) {
	q := r.URL.Query()
	var ls labels.Selector
	if v := q.Get("labelSelector"); v != "" {
		sel, err := labels.Parse(v)
		if err != nil {
			return nil, nil, apierrors.NewBadRequest("labelSelector: " + err.Error())
		}
		ls = sel
	}
	fs, err := res.parseFieldSelector(q.Get("fieldSelector"))
	if err != nil {
		return nil, nil, apierrors.NewBadRequest("fieldSelector: " + err.Error())
	}
	return ls, fs, nil
}

// items returns the objects of a list as virtkit.Objects.
func items(list virtkit.ObjectList) []virtkit.Object {
	v := reflect.ValueOf(list).Elem().FieldByName("Items")
	out := make([]virtkit.Object, v.Len())
	for i := range v.Len() {
		it := v.Index(i)
		if it.Kind() != reflect.Pointer {
			it = it.Addr()
		}
		out[i] = it.Interface().(virtkit.Object)
	}
	return out
}

// setItems replaces a list's items with objs.
func setItems(list virtkit.ObjectList, objs []virtkit.Object) {
	v := reflect.ValueOf(list).Elem().FieldByName("Items")
	n := reflect.MakeSlice(v.Type(), len(objs), len(objs))
	for i, o := range objs {
		ov := reflect.ValueOf(o)
		if v.Type().Elem().Kind() != reflect.Pointer {
			ov = ov.Elem()
		}
		n.Index(i).Set(ov)
	}
	v.Set(n)
}

// listObjects lists the matching objects and the list's resourceVersion.
func (s *Server) listObjects(r *http.Request, info *requestInfo, ls labels.Selector, fs fields.Selector) ([]virtkit.Object, string, error) {
	list := info.res.newList()
	if err := s.opts.Store.List(r.Context(), list, store.ListOptions{Namespace: info.namespace, LabelSelector: ls}); err != nil {
		return nil, "", storeError(info.res, "", err)
	}
	all := items(list)
	if fs == nil || fs.Empty() {
		return all, list.GetResourceVersion(), nil
	}
	kept := all[:0]
	for _, o := range all {
		if fs.Matches(info.res.fieldSet(o)) {
			kept = append(kept, o)
		}
	}
	return kept, list.GetResourceVersion(), nil
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, info *requestInfo) {
	ls, fs, err := s.selectors(r, info.res)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	objs, rv, err := s.listObjects(r, info, ls, fs)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if c := q.Get("continue"); c != "" {
		tok, err := parseContinue(c)
		if err != nil {
			s.writeError(w, r, apierrors.NewBadRequest("continue: "+err.Error()))
			return
		}
		rv = tok.RV
		start := len(objs)
		for i, o := range objs {
			if o.GetNamespace() > tok.Namespace || (o.GetNamespace() == tok.Namespace && o.GetName() > tok.Name) {
				start = i
				break
			}
		}
		objs = objs[start:]
	}
	var next string
	var remaining *int64
	if v := q.Get("limit"); v != "" {
		limit, err := strconv.ParseInt(v, 10, 64)
		if err != nil || limit < 0 {
			s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("limit: %q is not a non-negative integer", v)))
			return
		}
		if limit > 0 && int64(len(objs)) > limit {
			last := objs[limit-1]
			next = encodeContinue(continueToken{RV: rv, Namespace: last.GetNamespace(), Name: last.GetName()})
			n := int64(len(objs)) - limit
			remaining = &n
			objs = objs[:limit]
		}
	}
	switch {
	case wantsTable(r):
		t, err := s.table(r, info.res, objs, true)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		t.ResourceVersion, t.Continue, t.RemainingItemCount = rv, next, remaining
		s.writeObject(w, r, http.StatusOK, t)
	case wantsMetadata(r):
		l := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"}}
		l.ResourceVersion, l.Continue, l.RemainingItemCount = rv, next, remaining
		for _, o := range objs {
			l.Items = append(l.Items, *partialMetadata(o))
		}
		s.writeObject(w, r, http.StatusOK, l)
	case info.res.listView != nil:
		s.writeObject(w, r, http.StatusOK, info.res.listView(objs, rv, next, remaining))
	default:
		list := info.res.newList()
		setItems(list, objs)
		list.SetResourceVersion(rv)
		list.SetContinue(next)
		list.SetRemainingItemCount(remaining)
		s.writeObject(w, r, http.StatusOK, list)
	}
}

func encodeContinue(t continueToken) string {
	b, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(b)
}

func parseContinue(s string) (continueToken, error) {
	var t continueToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return t, errors.New("malformed token")
	}
	if err := json.Unmarshal(b, &t); err != nil || t.RV == "" {
		return t, errors.New("malformed token")
	}
	return t, nil
}

// readBody reads a bounded request body.
func (s *Server) readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, s.opts.MaxRequestBytes+1))
	if err != nil {
		return nil, apierrors.NewBadRequest("read body: " + err.Error())
	}
	if int64(len(b)) > s.opts.MaxRequestBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d bytes", s.opts.MaxRequestBytes))
	}
	return b, nil
}

// decodeBody decodes one object of the request's kind with virtkit's strict
// decoder and checks its namespace and name against the path.
func (s *Server) decodeBody(info *requestInfo, body []byte) (virtkit.Object, error) {
	objs, err := virtkit.DecodeBytes(body)
	if err != nil {
		return nil, decodeError(info.res, info.name, err)
	}
	if len(objs) != 1 {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body holds %d objects; want one %s", len(objs), info.res.gvk.Kind))
	}
	obj := objs[0]
	if gvk, _ := virtkit.GVKOf(obj); gvk != info.res.gvk {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body is a %s; this resource holds %s", gvk, info.res.gvk))
	}
	if ns := obj.GetNamespace(); ns == "" {
		obj.SetNamespace(info.namespace)
	} else if ns != info.namespace {
		return nil, apierrors.NewBadRequest(fmt.Sprintf(
			"the namespace of the provided object (%s) does not match the namespace sent on the request (%s)", ns, info.namespace))
	}
	if info.name != "" && obj.GetName() != info.name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf(
			"the name of the object (%s) does not match the name on the URL (%s)", obj.GetName(), info.name))
	}
	return obj, nil
}

func dryRun(r *http.Request) bool { return len(r.URL.Query()["dryRun"]) > 0 }

func (s *Server) create(w http.ResponseWriter, r *http.Request, info *requestInfo) {
	body, err := s.readBody(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	obj, err := s.decodeBody(info, body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if obj.GetResourceVersion() != "" {
		// Clients (kubectl create of a saved object) may carry one; the
		// Kubernetes API server ignores it on create.
		obj.SetResourceVersion("")
	}
	if err := s.admit(r, info, admission.Create, obj, nil); err != nil {
		s.writeError(w, r, err)
		return
	}
	if dryRun(r) {
		s.respondObject(w, r, http.StatusCreated, info.res, obj)
		return
	}
	if err := s.opts.Store.Create(r.Context(), obj); err != nil {
		s.writeError(w, r, storeError(info.res, obj.GetName(), err))
		return
	}
	s.respondObject(w, r, http.StatusCreated, info.res, obj)
}

func (s *Server) update(w http.ResponseWriter, r *http.Request, info *requestInfo) {
	body, err := s.readBody(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	obj, err := s.decodeBody(info, body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if obj.GetResourceVersion() == "" {
		s.writeError(w, r, apierrors.NewInvalid(info.res.gvk.GroupKind(), info.name, fieldRequiredRV()))
		return
	}
	out, err := s.write(r, info, obj, nil)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.respondObject(w, r, http.StatusOK, info.res, out)
}

// write replaces the stored object with obj (the status only for the
// status subresource), through defaulting, validation and update
// admission. cur, when not nil, is the stored state obj was made from.
func (s *Server) write(r *http.Request, info *requestInfo, obj, cur virtkit.Object) (virtkit.Object, error) {
	ctx := r.Context()
	if cur == nil {
		cur = info.res.newObject()
		if err := s.opts.Store.Get(ctx, s.key(info), cur); err != nil {
			return nil, storeError(info.res, info.name, err)
		}
	}
	if info.subresource == "status" {
		next := cur.DeepCopyObject().(virtkit.Object)
		reflect.ValueOf(next).Elem().FieldByName("Status").Set(reflect.ValueOf(obj).Elem().FieldByName("Status"))
		next.SetResourceVersion(obj.GetResourceVersion())
		u, _ := UserFrom(ctx)
		if err := admitStatus(info.res, u, next, cur); err != nil {
			return nil, err
		}
		if dryRun(r) {
			return next, nil
		}
		if err := s.opts.Store.UpdateStatus(ctx, next); err != nil {
			return nil, storeError(info.res, info.name, err)
		}
		return next, nil
	}
	next, err := s.admitUpdate(r, info, obj, cur)
	if err != nil {
		return nil, err
	}
	next.SetResourceVersion(obj.GetResourceVersion())
	next.SetUID(cur.GetUID())
	next.SetCreationTimestamp(cur.GetCreationTimestamp())
	next.SetDeletionTimestamp(cur.GetDeletionTimestamp())
	next.SetGeneration(cur.GetGeneration())
	if dryRun(r) {
		return next, nil
	}
	if err := s.opts.Store.Update(ctx, next); err != nil {
		return nil, storeError(info.res, info.name, err)
	}
	return next, nil
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request, info *requestInfo) {
	if info.subresource != "" {
		s.writeError(w, r, apierrors.NewMethodNotSupported(info.res.groupResource(), "delete of "+info.subresource))
		return
	}
	body, err := s.readBody(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var opts metav1.DeleteOptions
	if len(body) > 0 {
		if err := json.Unmarshal(body, &opts); err != nil {
			s.writeError(w, r, apierrors.NewBadRequest("DeleteOptions: "+err.Error()))
			return
		}
	}
	policy, err := propagationPolicy(r, body, &opts)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	obj := info.res.newObject()
	obj.SetNamespace(info.namespace)
	obj.SetName(info.name)
	if dryRun(r) || len(opts.DryRun) > 0 {
		if err := s.opts.Store.Get(r.Context(), s.key(info), obj); err != nil {
			s.writeError(w, r, storeError(info.res, info.name, err))
			return
		}
		s.respondObject(w, r, http.StatusOK, info.res, obj)
		return
	}
	if err := s.opts.Store.Delete(r.Context(), obj, store.DeleteOptions{Preconditions: opts.Preconditions, PropagationPolicy: policy}); err != nil {
		s.writeError(w, r, storeError(info.res, info.name, err))
		return
	}
	if obj.GetDeletionTimestamp() != nil && len(obj.GetFinalizers()) > 0 {
		s.respondObject(w, r, http.StatusOK, info.res, obj)
		return
	}
	st := &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details: &metav1.StatusDetails{
			Name: info.name, Group: info.res.gvk.Group, Kind: info.res.plural, UID: obj.GetUID(),
		},
	}
	s.writeObject(w, r, http.StatusOK, st)
}
