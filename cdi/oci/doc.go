// Package oci pulls disk images out of OCI/Docker registries in the
// containerDisk format KubeVirt and CDI share: a container image whose
// filesystem holds one disk image (raw or qcow2) under /disk/.
//
// A [Puller] resolves a reference to a manifest digest, caches the extracted
// disk by that digest (so two tags of one image share a file, and a node
// pulls a given image once), and honours Kubernetes image pull policies
// (Always, IfNotPresent, Never). Both the DataVolume registry importer and
// the node agent's containerDisk resolver use it.
//
// Registries are tenant-chosen: every connection, redirects to blob
// storage included, obeys an address policy (no loopback, link-local,
// metadata, unspecified or node addresses unless Options.AllowedNetworks
// allows them; ErrAddressNotAllowed), and Request.MaxBytes refuses a disk
// that declares more before a byte of it is copied.
//
// The cache is shared by tenants, private images are not: the cache serves
// a pull without asking the registry only when an anonymous pull resolved
// the image, or when the pull presents credentials the registry accepted
// for that repository before (kept as keyed hashes, never in clear). Any
// other pull asks the registry first, so a tenant without access gets
// ErrUnauthorized or ErrNotFound, and policy Never gets ErrNotPresent.
package oci
