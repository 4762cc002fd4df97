package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
)

// DefaultMaxObjectBytes bounds the encoded size of one stored object when a
// store's option leaves it at zero. It is etcd's default request limit
// (--max-request-bytes, 1.5 MiB): anything larger cannot have been written
// through a default etcd, so it is refused on write and treated as corrupt
// on read.
const DefaultMaxObjectBytes = 3 << 19

// CorruptReason says why a stored object is corrupt. The set is small and
// fixed so it can label a metric.
type CorruptReason string

// Corrupt reasons.
const (
	// CorruptSize: the stored value is larger than the store's bound.
	CorruptSize CorruptReason = "size"
	// CorruptJSON: the value is not a JSON object of the kind's Go type.
	CorruptJSON CorruptReason = "json"
	// CorruptKind: the value names another kind or apiVersion.
	CorruptKind CorruptReason = "kind"
	// CorruptKey: the backend key is malformed, or the value's name or
	// namespace is not the key's.
	CorruptKey CorruptReason = "key"
)

// maxErrorText bounds the stored key and the cause quoted in a
// CorruptError's message: both come from the backend, not from virtkit.
const maxErrorText = 256

// CorruptError describes one stored object a store cannot use. It wraps
// [ErrCorrupt] and the cause; match with errors.Is(err, ErrCorrupt) and
// errors.As(err, &ce) for the details.
type CorruptError struct {
	// Kind is the kind whose key space holds the value.
	Kind string
	// Key is the object's key as read from the backend key; zero when the
	// backend key itself is malformed.
	Key Key
	// StorageKey is the backend's own key (the etcd key): what an operator
	// rewrites or deletes to repair the store.
	StorageKey string
	// ResourceVersion is the version of the corrupt value.
	ResourceVersion string
	// Reason classifies the defect.
	Reason CorruptReason
	// Err is the cause (a JSON error, a mismatch).
	Err error
}

// Error names the kind, the key and where it is stored; the key, the
// storage key and the cause are bounded in length (the storage key quoted).
func (e *CorruptError) Error() string {
	cause := "unknown"
	if e.Err != nil {
		cause = bounded(e.Err.Error())
	}
	return fmt.Sprintf("%s %s: %s (%s) at %s, resourceVersion %s: %s",
		e.Kind, bounded(e.Key.String()), ErrCorrupt.Error(), e.Reason, strconv.Quote(bounded(e.StorageKey)), e.ResourceVersion, cause)
}

// Unwrap returns ErrCorrupt and the cause.
func (e *CorruptError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrCorrupt}
	}
	return []error{ErrCorrupt, e.Err}
}

// bounded cuts s to maxErrorText bytes on a rune boundary and makes it
// valid UTF-8.
func bounded(s string) string {
	if len(s) > maxErrorText {
		cut := maxErrorText
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return string(bytes.ToValidUTF8([]byte(s), []byte("\uFFFD")))
}

// CorruptReporter is implemented by stores whose backend can hold values
// they cannot decode (etcd, written to by other tools). CorruptObjects
// returns the corrupt objects the store currently knows of, sorted by
// storage key: found by List, Watch or Get, and forgotten once the key is
// seen repaired (rewritten with a valid object, or deleted). It is cheap
// and does not block.
type CorruptReporter interface {
	CorruptObjects() []CorruptError
}

// StoredValue is one raw value a backend holds: what [Scheme.DecodeStored]
// checks.
type StoredValue struct {
	// Key is the key parsed from StorageKey.
	Key Key
	// StorageKey is the backend's key, for error messages.
	StorageKey string
	// ResourceVersion is set on the decoded object.
	ResourceVersion string
	// Data is the encoded object (JSON).
	Data []byte
}

// DecodeStored turns a backend's value for kind into an object, trusting
// nothing in it: the value must be at most maxBytes long (<= 0 means
// DefaultMaxObjectBytes), hold no number with a decimal exponent beyond
// MaxDecimalExponent, decode as JSON into the kind's Go type, name no
// other kind or apiVersion (empty ones are accepted and filled in), and
// carry exactly v.Key's name and namespace. The object comes out with
// apiVersion and kind from the registration and v.ResourceVersion. Any
// failure is a *CorruptError wrapping ErrCorrupt; it never panics.
func (s *Scheme) DecodeStored(kind Kind, v StoredValue, maxBytes int) (obj virtkit.Object, err error) {
	corrupt := func(reason CorruptReason, cause error) error {
		return &CorruptError{Kind: kind.Name, Key: v.Key, StorageKey: v.StorageKey,
			ResourceVersion: v.ResourceVersion, Reason: reason, Err: cause}
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxObjectBytes
	}
	if len(v.Data) > maxBytes {
		return nil, corrupt(CorruptSize, fmt.Errorf("value of %d bytes exceeds the bound of %d", len(v.Data), maxBytes))
	}
	defer func() {
		// A decoder of a field type (apimachinery's or a caller's) must not
		// take the process down over one bad value.
		if p := recover(); p != nil {
			obj, err = nil, corrupt(CorruptJSON, fmt.Errorf("decoder panicked: %v", p))
		}
	}()
	if err := checkExponents(v.Data); err != nil {
		return nil, corrupt(CorruptJSON, err)
	}
	obj = kind.New()
	if err := json.Unmarshal(v.Data, obj); err != nil {
		return nil, corrupt(CorruptJSON, err)
	}
	// Read TypeMeta's strings as stored: GroupVersionKind() would turn a
	// malformed apiVersion into an empty one.
	var tm metav1.TypeMeta
	if t, ok := obj.GetObjectKind().(*metav1.TypeMeta); ok {
		tm = *t
	}
	if tm.Kind != "" && tm.Kind != kind.Name {
		return nil, corrupt(CorruptKind, fmt.Errorf("kind %q, want %q", bounded(tm.Kind), kind.Name))
	}
	if kind.APIVersion != "" && tm.APIVersion != "" && tm.APIVersion != kind.APIVersion {
		return nil, corrupt(CorruptKind, fmt.Errorf("apiVersion %q, want %q", bounded(tm.APIVersion), kind.APIVersion))
	}
	if got := KeyOf(obj); got != v.Key {
		return nil, corrupt(CorruptKey, fmt.Errorf("metadata names %q, the key is %q", bounded(got.String()), bounded(v.Key.String())))
	}
	setTypeMeta(kind, obj)
	obj.SetResourceVersion(v.ResourceVersion)
	return obj, nil
}
