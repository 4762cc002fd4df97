// Package storage holds virtkit's storage classes: the provisioners that
// decide where a DataVolume's disk lives on a host. A local class keeps a
// volume in one node's directory (the VMI must run there); a shared class
// keeps it in a directory every node mounts (ReadWriteMany: the volume
// survives a live migration).
package storage
