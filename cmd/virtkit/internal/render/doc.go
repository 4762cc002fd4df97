// Package render is `virtkit render`: the libvirt domain XML of each
// VirtualMachineInstance, VirtualMachine template and ReplicaSet template
// in a manifest, built by package domain after KubeVirt's defaults and
// validation, with the host facts (domain type, networks, dedicated CPUs)
// from the command line. The output is reproducible: a VMI without a
// firmware UUID gets one derived from its namespace and name.
//
// Like package get, it is an [Options] that the cobra wiring in package
// main fills from the command line, then Complete, Validate and Run; Run
// returns [ErrInvalid] after printing the problems, which main turns into
// exit status 1.
package render
