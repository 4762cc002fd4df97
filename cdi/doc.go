// Package cdi plays the role of KubeVirt's Containerized Data Importer for
// virtkit. It turns a VirtualMachine's dataVolumeTemplates into
// DataVolumes the VM owns (and removes them when the VM is gone), and its
// [Resolver] maps a node's dataVolume volumes to their storage class's
// files and pulls containerDisk images from registries.
//
// The subpackages hold the rest: storage (the storage classes), importer
// (the per-node import worker and the transfers), oci (registry pulls
// shared by DataVolume registry imports and containerDisks). The
// DataVolume controller that schedules imports lives in package
// controller. The domain builder never imports these packages; the node
// agent and the control plane wire them in.
package cdi
