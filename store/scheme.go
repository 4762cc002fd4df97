package store

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/virtkit/virtkit"
)

// Kind describes one object kind a store can hold. Object and List are
// prototypes (pointers to zero values) from which the store learns the Go
// types; the kind of an object passed to a Store method is found from its Go
// type.
//
// The object type must be a struct with embedded metav1.TypeMeta and
// metav1.ObjectMeta. A field named Status is the status subresource; every
// other field (Spec, and anything else) is "spec" for generation purposes.
type Kind struct {
	// Name is the kind ("VirtualMachineInstance"); it appears in errors and
	// in the etcd key layout.
	Name string
	// APIVersion, when set, is checked against an object's apiVersion if
	// the object sets one.
	APIVersion string
	// Object is a prototype object, e.g. &virtkit.VirtualMachine{}.
	Object virtkit.Object
	// List is a prototype list, e.g. &virtkit.VirtualMachineList{}. Its
	// Items field holds values or pointers of the object type.
	List virtkit.ObjectList
	// ClusterScoped kinds have no namespace.
	ClusterScoped bool
}

// New returns a new zero object of the kind.
func (k Kind) New() virtkit.Object {
	return reflect.New(reflect.TypeOf(k.Object).Elem()).Interface().(virtkit.Object)
}

// Scheme maps Go types to registered kinds and applies the metadata rules
// every Store implementation shares (what Create sets, what Update may
// change, when generation moves, graceful deletion). It is immutable after
// NewScheme and safe for concurrent use. Store implementations outside this
// package use it so they behave exactly like the memory store.
type Scheme struct {
	byObject map[reflect.Type]*kindInfo
	byList   map[reflect.Type]*kindInfo
	byName   map[string]*kindInfo
}

type kindInfo struct {
	Kind
	// status is the index of the Status field, -1 if none.
	status int
	// spec lists the fields that are neither TypeMeta, ObjectMeta nor Status.
	spec []int
}

// NewScheme registers kinds. It fails with ErrInvalid when a kind is
// malformed or registered twice (by name or Go type).
func NewScheme(kinds ...Kind) (*Scheme, error) {
	s := &Scheme{
		byObject: map[reflect.Type]*kindInfo{},
		byList:   map[reflect.Type]*kindInfo{},
		byName:   map[string]*kindInfo{},
	}
	for i, k := range kinds {
		info, err := newKindInfo(k)
		if err != nil {
			return nil, fmt.Errorf("kinds[%d] %q: %w", i, k.Name, err)
		}
		ot, lt := reflect.TypeOf(k.Object), reflect.TypeOf(k.List)
		if _, dup := s.byName[k.Name]; dup {
			return nil, fmt.Errorf("kinds[%d].name %q: %w: registered twice", i, k.Name, ErrInvalid)
		}
		if _, dup := s.byObject[ot]; dup {
			return nil, fmt.Errorf("kinds[%d].object %s: %w: type registered twice", i, ot, ErrInvalid)
		}
		if _, dup := s.byList[lt]; dup {
			return nil, fmt.Errorf("kinds[%d].list %s: %w: type registered twice", i, lt, ErrInvalid)
		}
		s.byName[k.Name], s.byObject[ot], s.byList[lt] = info, info, info
	}
	return s, nil
}

func newKindInfo(k Kind) (*kindInfo, error) {
	if k.Name == "" || strings.ContainsAny(k.Name, "/ ") {
		return nil, fmt.Errorf("name: %w: must be non-empty without '/' or spaces", ErrInvalid)
	}
	if k.Object == nil || k.List == nil {
		return nil, fmt.Errorf("object/list: %w: prototypes required", ErrInvalid)
	}
	ot := reflect.TypeOf(k.Object)
	if ot.Kind() != reflect.Pointer || ot.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("object: %w: %s is not a pointer to a struct", ErrInvalid, ot)
	}
	lt := reflect.TypeOf(k.List)
	if lt.Kind() != reflect.Pointer || lt.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("list: %w: %s is not a pointer to a struct", ErrInvalid, lt)
	}
	items, ok := lt.Elem().FieldByName("Items")
	if !ok || items.Type.Kind() != reflect.Slice ||
		(items.Type.Elem() != ot.Elem() && items.Type.Elem() != ot) {
		return nil, fmt.Errorf("list: %w: %s needs an Items field of []%s or []%s", ErrInvalid, lt, ot.Elem(), ot)
	}
	info := &kindInfo{Kind: k, status: -1}
	st := ot.Elem()
	hasMeta := false
	for i := range st.NumField() {
		f := st.Field(i)
		switch {
		case f.Anonymous && f.Type == reflect.TypeOf(metav1.TypeMeta{}):
		case f.Anonymous && f.Type == reflect.TypeOf(metav1.ObjectMeta{}):
			hasMeta = true
		case f.Name == "Status":
			info.status = i
		default:
			info.spec = append(info.spec, i)
		}
	}
	if !hasMeta {
		return nil, fmt.Errorf("object: %w: %s does not embed metav1.ObjectMeta", ErrInvalid, ot)
	}
	return info, nil
}

// Kinds returns the registered kinds sorted by name.
func (s *Scheme) Kinds() []Kind {
	out := make([]Kind, 0, len(s.byName))
	for _, k := range s.byName {
		out = append(out, k.Kind)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// KindOf returns the kind of obj's Go type; ErrUnknownKind if unregistered.
func (s *Scheme) KindOf(obj runtime.Object) (Kind, error) {
	info, err := s.info(obj)
	if err != nil {
		return Kind{}, err
	}
	return info.Kind, nil
}

func (s *Scheme) info(obj runtime.Object) (*kindInfo, error) {
	if obj == nil {
		return nil, fmt.Errorf("nil object: %w", ErrInvalid)
	}
	t := reflect.TypeOf(obj)
	if info, ok := s.byObject[t]; ok {
		return info, nil
	}
	if info, ok := s.byList[t]; ok {
		return info, nil
	}
	return nil, fmt.Errorf("%s: %w", t, ErrUnknownKind)
}

// ObjectKey validates obj for a Store call and returns its kind and key:
// the Go type must be registered, the pointer non-nil, the name set (unless
// allowGenerateName and generateName is set) and free of '/', and the
// namespace set exactly when the kind is namespaced. An apiVersion or kind
// set in obj's TypeMeta must agree with the registration.
func (s *Scheme) ObjectKey(obj virtkit.Object, allowGenerateName bool) (Kind, Key, error) {
	info, err := s.info(obj)
	if err != nil {
		return Kind{}, Key{}, err
	}
	if v := reflect.ValueOf(obj); v.IsNil() {
		return info.Kind, Key{}, fmt.Errorf("%s: nil object: %w", info.Name, ErrInvalid)
	}
	key := KeyOf(obj)
	invalid := func(field, msg string) error {
		return fmt.Errorf("%s %s: %w: %s: %s", info.Name, key, ErrInvalid, field, msg)
	}
	if tk := obj.GetObjectKind().GroupVersionKind(); tk.Kind != "" && tk.Kind != info.Name {
		return info.Kind, key, invalid("kind", fmt.Sprintf("%q does not match the Go type (%s)", tk.Kind, info.Name))
	}
	if av := obj.GetObjectKind().GroupVersionKind().GroupVersion().String(); info.APIVersion != "" && av != "" && av != info.APIVersion {
		return info.Kind, key, invalid("apiVersion", fmt.Sprintf("%q, want %q", av, info.APIVersion))
	}
	switch {
	case key.Name == "" && !(allowGenerateName && obj.GetGenerateName() != ""):
		return info.Kind, key, invalid("metadata.name", "required")
	case badPathSegment(key.Name) && key.Name != "":
		return info.Kind, key, invalid("metadata.name", fmt.Sprintf("%q may not contain '/' or be '.' or '..'", key.Name))
	case strings.Contains(obj.GetGenerateName(), "/"):
		return info.Kind, key, invalid("metadata.generateName", "may not contain '/'")
	}
	switch {
	case info.ClusterScoped && key.Namespace != "":
		return info.Kind, key, invalid("metadata.namespace", fmt.Sprintf("must be empty for cluster-scoped kind %s", info.Name))
	case !info.ClusterScoped && key.Namespace == "":
		return info.Kind, key, invalid("metadata.namespace", "required")
	case badPathSegment(key.Namespace) && key.Namespace != "":
		return info.Kind, key, invalid("metadata.namespace", fmt.Sprintf("%q may not contain '/' or be '.' or '..'", key.Namespace))
	}
	return info.Kind, key, nil
}

// CheckKey validates a key for kind, as ObjectKey does for an object's
// name and namespace.
func CheckKey(kind Kind, key Key) error {
	invalid := func(field, msg string) error {
		return fmt.Errorf("%s %s: %w: %s: %s", kind.Name, key, ErrInvalid, field, msg)
	}
	switch {
	case key.Name == "":
		return invalid("name", "required")
	case badPathSegment(key.Name):
		return invalid("name", fmt.Sprintf("%q may not contain '/' or be '.' or '..'", key.Name))
	case kind.ClusterScoped && key.Namespace != "":
		return invalid("namespace", fmt.Sprintf("must be empty for cluster-scoped kind %s", kind.Name))
	case !kind.ClusterScoped && key.Namespace == "":
		return invalid("namespace", "required")
	case badPathSegment(key.Namespace) && key.Namespace != "":
		return invalid("namespace", fmt.Sprintf("%q may not contain '/' or be '.' or '..'", key.Namespace))
	}
	return nil
}

func badPathSegment(s string) bool {
	return strings.Contains(s, "/") || s == "." || s == ".."
}

// ListKind returns the kind of list's Go type; ErrUnknownKind if unregistered.
func (s *Scheme) ListKind(list virtkit.ObjectList) (Kind, error) {
	if list == nil || reflect.ValueOf(list).IsNil() {
		return Kind{}, fmt.Errorf("nil list: %w", ErrInvalid)
	}
	info, ok := s.byList[reflect.TypeOf(list)]
	if !ok {
		return Kind{}, fmt.Errorf("list %s: %w", reflect.TypeOf(list), ErrUnknownKind)
	}
	return info.Kind, nil
}

// WriteOp is what a store must do after a Prepare* call.
type WriteOp int

const (
	// WriteNone: nothing changed; keep the stored object and its version.
	WriteNone WriteOp = iota
	// WritePut: store the returned object under a new resourceVersion.
	WritePut
	// WriteRemove: remove the object (a Deleted event).
	WriteRemove
)

// PrepareCreate returns the object to store for Create: a deep copy of obj
// with apiVersion and kind from the registration, uid, generation 1 and creationTimestamp (now, second precision) set,
// any deletion fields cleared and, if the name is empty, a name generated
// from generateName. resourceVersion is left for the store to set; a
// resourceVersion in obj is ErrInvalid.
func (s *Scheme) PrepareCreate(obj virtkit.Object, now time.Time) (virtkit.Object, Kind, Key, error) {
	return s.PrepareCreateWithIDs(obj, now, nil)
}

// PrepareCreateWithIDs is PrepareCreate drawing the uid and a generated
// name from ids; nil is RandomIDs.
func (s *Scheme) PrepareCreateWithIDs(obj virtkit.Object, now time.Time, ids IDs) (virtkit.Object, Kind, Key, error) {
	if ids == nil {
		ids = randomIDs{}
	}
	kind, key, err := s.ObjectKey(obj, true)
	if err != nil {
		return nil, kind, key, err
	}
	if obj.GetResourceVersion() != "" {
		return nil, kind, key, fmt.Errorf("%s %s: %w: metadata.resourceVersion: must not be set on create", kind.Name, key, ErrInvalid)
	}
	next := obj.DeepCopyObject().(virtkit.Object)
	setTypeMeta(kind, next)
	if next.GetName() == "" {
		next.SetName(ids.Name(kind.Name, key.Namespace, next.GetGenerateName(), next))
		key.Name = next.GetName()
	}
	next.SetUID(ids.UID(kind.Name, key, next))
	next.SetGeneration(1)
	next.SetCreationTimestamp(metav1.NewTime(now).Rfc3339Copy())
	next.SetDeletionTimestamp(nil)
	next.SetDeletionGracePeriodSeconds(nil)
	return next, kind, key, nil
}

// PrepareUpdate returns the object to store for Update of stored with obj:
// obj's spec and mutable metadata, stored's status and system metadata,
// generation+1 when the spec changed. ErrConflict if the resourceVersions
// differ; ErrInvalid when finalizers are added to an object being deleted.
// The result may share memory with stored: both must be treated as
// immutable.
func (s *Scheme) PrepareUpdate(stored, obj virtkit.Object) (virtkit.Object, WriteOp, error) {
	info, err := s.info(obj)
	if err != nil {
		return nil, WriteNone, err
	}
	key := KeyOf(obj)
	if obj.GetResourceVersion() != stored.GetResourceVersion() {
		return nil, WriteNone, conflict(info.Name, key, obj.GetResourceVersion(), stored.GetResourceVersion())
	}
	if stored.GetDeletionTimestamp() != nil {
		have := map[string]bool{}
		for _, f := range stored.GetFinalizers() {
			have[f] = true
		}
		for _, f := range obj.GetFinalizers() {
			if !have[f] {
				return nil, WriteNone, fmt.Errorf("%s %s: %w: metadata.finalizers: cannot add %q while the object is being deleted", info.Name, key, ErrInvalid, f)
			}
		}
	}
	next := obj.DeepCopyObject().(virtkit.Object)
	setTypeMeta(info.Kind, next)
	sv, nv := reflect.ValueOf(stored).Elem(), reflect.ValueOf(next).Elem()
	if info.status >= 0 {
		nv.Field(info.status).Set(sv.Field(info.status))
	}
	next.SetUID(stored.GetUID())
	next.SetCreationTimestamp(stored.GetCreationTimestamp())
	next.SetDeletionTimestamp(stored.GetDeletionTimestamp())
	next.SetDeletionGracePeriodSeconds(stored.GetDeletionGracePeriodSeconds())
	next.SetGenerateName(stored.GetGenerateName())
	next.SetGeneration(stored.GetGeneration())
	specChanged := false
	for _, i := range info.spec {
		// Compared through pointers: boxing the fields would copy them.
		if !equality.Semantic.DeepEqual(sv.Field(i).Addr().Interface(), nv.Field(i).Addr().Interface()) {
			specChanged = true
			next.SetGeneration(stored.GetGeneration() + 1)
			break
		}
	}
	if next.GetDeletionTimestamp() != nil && len(next.GetFinalizers()) == 0 {
		return next, WriteRemove, nil
	}
	if !specChanged &&
		equality.Semantic.DeepEqual(sv.FieldByName("ObjectMeta").Addr().Interface(), nv.FieldByName("ObjectMeta").Addr().Interface()) &&
		stored.GetObjectKind().GroupVersionKind() == next.GetObjectKind().GroupVersionKind() {
		return stored, WriteNone, nil
	}
	return next, WritePut, nil
}

// PrepareUpdateStatus returns the object to store for UpdateStatus: stored
// with obj's status. ErrConflict if the resourceVersions differ; ErrInvalid
// for a kind without a Status field. The result may share memory with
// stored: both must be treated as immutable.
func (s *Scheme) PrepareUpdateStatus(stored, obj virtkit.Object) (virtkit.Object, WriteOp, error) {
	info, err := s.info(obj)
	if err != nil {
		return nil, WriteNone, err
	}
	key := KeyOf(obj)
	if info.status < 0 {
		return nil, WriteNone, fmt.Errorf("%s %s: %w: status: kind has no Status field", info.Name, key, ErrInvalid)
	}
	if obj.GetResourceVersion() != stored.GetResourceVersion() {
		return nil, WriteNone, conflict(info.Name, key, obj.GetResourceVersion(), stored.GetResourceVersion())
	}
	sv := reflect.ValueOf(stored).Elem()
	// Compared through pointers (boxing would copy both statuses), and obj
	// copied only for a status that changes.
	if equality.Semantic.DeepEqual(sv.Field(info.status).Addr().Interface(), reflect.ValueOf(obj).Elem().Field(info.status).Addr().Interface()) {
		return stored, WriteNone, nil
	}
	status := reflect.ValueOf(obj.DeepCopyObject()).Elem().Field(info.status)
	next := reflect.New(sv.Type())
	next.Elem().Set(sv) // shallow: metadata and spec are shared, never mutated
	next.Elem().Field(info.status).Set(status)
	return next.Interface().(virtkit.Object), WritePut, nil
}

// PrepareDelete decides a Delete of stored: ErrConflict when a precondition
// fails, ErrInvalid for an unknown propagation policy. The policy's
// finalizer (orphan, foregroundDeletion) joins the object's finalizers; with
// finalizers, the object gets a deletionTimestamp (WritePut), or nothing
// happens if it already has one and the policy changes none of them
// (WriteNone); without, WriteRemove.
func (s *Scheme) PrepareDelete(stored virtkit.Object, opts DeleteOptions, now time.Time) (virtkit.Object, WriteOp, error) {
	info, err := s.info(stored)
	if err != nil {
		return nil, WriteNone, err
	}
	key := KeyOf(stored)
	if p := opts.Preconditions; p != nil {
		if p.UID != nil && *p.UID != stored.GetUID() {
			return nil, WriteNone, fmt.Errorf("%s %s: %w: precondition uid %s, stored %s", info.Name, key, ErrConflict, *p.UID, stored.GetUID())
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != stored.GetResourceVersion() {
			return nil, WriteNone, conflict(info.Name, key, *p.ResourceVersion, stored.GetResourceVersion())
		}
	}
	if err := opts.Validate(); err != nil {
		return nil, WriteNone, fmt.Errorf("%s %s: %w", info.Name, key, err)
	}
	finalizers, changed := propagationFinalizers(stored.GetFinalizers(), opts.PropagationPolicy)
	if len(finalizers) == 0 {
		return stored, WriteRemove, nil
	}
	if stored.GetDeletionTimestamp() != nil && !changed {
		return stored, WriteNone, nil
	}
	next := stored.DeepCopyObject().(virtkit.Object)
	next.SetFinalizers(finalizers)
	if next.GetDeletionTimestamp() == nil {
		ts := metav1.NewTime(now).Rfc3339Copy()
		next.SetDeletionTimestamp(&ts)
		zero := int64(0)
		next.SetDeletionGracePeriodSeconds(&zero)
	}
	return next, WritePut, nil
}

// setTypeMeta makes stored objects self-describing: apiVersion and kind
// always come from the registration.
func setTypeMeta(kind Kind, obj virtkit.Object) {
	obj.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(kind.APIVersion, kind.Name))
}

func conflict(kind string, key Key, got, stored string) error {
	return fmt.Errorf("%s %s: %w (resourceVersion %q, stored %q)", kind, key, ErrConflict, got, stored)
}

// SetList fills list's Items with objs (which it takes ownership of).
func SetList(list virtkit.ObjectList, objs []runtime.Object) error {
	return meta.SetList(list, objs)
}

// Into copies src (an object of the same Go type) into dst, the caller's
// pointer. It does not copy deeply: src must be the caller's own copy.
func Into(dst, src virtkit.Object) {
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src).Elem())
}

// Matches reports whether obj is in namespace ("" = all) and matches sel
// (nil = everything).
func Matches(obj metav1.Object, namespace string, sel labels.Selector) bool {
	if namespace != "" && obj.GetNamespace() != namespace {
		return false
	}
	return sel == nil || sel.Matches(labels.Set(obj.GetLabels()))
}
