// Package apply is `virtkit apply`: create or update objects from
// manifests through the control plane's API, as kubectl apply does for
// custom resources (a create, or a three-way JSON merge patch against the
// manifest last applied, reported as created, configured or unchanged);
// the server decodes, defaults and validates. Like package get, it is an
// [Options] that the cobra wiring in package main fills from the command
// line, then Complete, Validate and Run.
package apply
