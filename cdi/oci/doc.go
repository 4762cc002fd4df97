// Package oci pulls disk images out of OCI/Docker registries in the
// containerDisk format KubeVirt and CDI share: a container image whose
// filesystem holds one disk image (raw or qcow2) under /disk/.
//
// A [Puller] resolves a reference to a manifest digest, caches the extracted
// disk by that digest (so two tags of one image share a file, and a node
// pulls a given image once), and honours Kubernetes image pull policies
// (Always, IfNotPresent, Never). Both the DataVolume registry importer and
// the node agent's containerDisk resolver use it.
package oci
