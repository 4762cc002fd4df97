// Package cdi plays the role of KubeVirt's Containerized Data Importer for
// virtkit: it turns a VirtualMachine's dataVolumeTemplates into
// DataVolumes the VM owns, and removes them when the VM is gone.
//
// The domain builder never imports this package; the node agent and the
// control plane wire it in.
package cdi
