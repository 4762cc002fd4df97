package storage

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/virtkit/virtkit"
)

// ErrUnknownClass: a DataVolume names a storage class nobody provides.
var ErrUnknownClass = errors.New("unknown storage class")

// ErrAccessMode: the class cannot offer the requested access mode.
var ErrAccessMode = errors.New("storage class does not offer the access mode")

// Default class names.
const (
	LocalClass  = "local"
	SharedClass = "shared"
)

// Class is a provisioner: where the volume namespace/name lives on node.
type Class interface {
	// Name is the storageClassName that selects this class.
	Name() string
	// Shared reports whether every node sees the same files (then the
	// volume is ReadWriteMany and does not pin its VMI to a node).
	Shared() bool
	// Path is the disk file of volume namespace/name as node sees it.
	Path(node, namespace, name string) string
}

// Local keeps volumes under a per-node directory: Dir(node)/dv/<ns>/<name>.img,
// the layout domain.DirResolver reads.
type Local struct {
	// ClassName; empty is LocalClass.
	ClassName string
	// Dir returns a node's working directory.
	Dir func(node string) string
}

// Name implements Class.
func (l Local) Name() string {
	if l.ClassName == "" {
		return LocalClass
	}
	return l.ClassName
}

// Shared implements Class.
func (Local) Shared() bool { return false }

// Path implements Class.
func (l Local) Path(node, namespace, name string) string {
	return filepath.Join(l.Dir(node), "dv", Sanitize(namespace), Sanitize(name)+".img")
}

// SharedDir keeps volumes in one directory every node mounts at the same
// path (NFS, a cluster filesystem, or one host's disk in tests).
type SharedDir struct {
	// ClassName; empty is SharedClass.
	ClassName string
	// Dir is the shared directory.
	Dir string
}

// Name implements Class.
func (s SharedDir) Name() string {
	if s.ClassName == "" {
		return SharedClass
	}
	return s.ClassName
}

// Shared implements Class.
func (SharedDir) Shared() bool { return true }

// Path implements Class.
func (s SharedDir) Path(_, namespace, name string) string {
	return filepath.Join(s.Dir, "dv", Sanitize(namespace), Sanitize(name)+".img")
}

// Classes is a set of classes with a default.
type Classes struct {
	// List holds the classes; the first is the default unless Default names one.
	List    []Class
	Default string
}

// Get returns the class of that name ("" is the default).
func (c Classes) Get(name string) (Class, error) {
	if name == "" {
		name = c.Default
		if name == "" && len(c.List) > 0 {
			return c.List[0], nil
		}
	}
	for _, cl := range c.List {
		if cl.Name() == name {
			return cl, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownClass, name)
}

// ForDataVolume picks the class of a DataVolume: its storageClassName,
// else the default; a ReadWriteMany request without a class name picks the
// first shared class. It refuses ReadWriteMany on a local class.
func (c Classes) ForDataVolume(spec *virtkit.DataVolumeSpec) (Class, error) {
	claim := spec.PVC
	if claim == nil {
		claim = spec.Storage
	}
	var name string
	rwx := false
	if claim != nil {
		if claim.StorageClassName != nil {
			name = *claim.StorageClassName
		}
		for _, m := range claim.AccessModes {
			rwx = rwx || m == virtkit.ReadWriteMany
		}
	}
	if name == "" && rwx {
		for _, cl := range c.List {
			if cl.Shared() {
				return cl, nil
			}
		}
	}
	cl, err := c.Get(name)
	if err != nil {
		return nil, err
	}
	if rwx && !cl.Shared() {
		return nil, fmt.Errorf("%w: class %q is node-local and cannot offer ReadWriteMany", ErrAccessMode, cl.Name())
	}
	return cl, nil
}

// Sanitize keeps a string usable as one path element (the same mapping
// as domain.DirResolver's).
func Sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || string(b) == "." || string(b) == ".." {
		return "_" + string(b)
	}
	return string(b)
}

// SnapshotVolume is a claim's data as the storage layer addresses it: the
// DataVolume namespace/name, the storage class holding it and, for a
// node-local class, the node (the DataVolume's
// virtkit.DataVolumeStorageClassAnnotation and
// virtkit.DataVolumeVolumeNodeAnnotation).
type SnapshotVolume struct {
	Namespace, Name string
	StorageClass    string
	Node            string
}
