// Package apply is `virtkit apply`: create or update objects from
// manifests over the CLI's two transports. Through the API it works as
// kubectl apply does for custom resources (a create, or a three-way JSON
// merge patch against the manifest last applied, reported as created,
// configured or unchanged); through a store it runs the library's
// admission and apply (cluster.ApplyOne). Like package get, it is an
// [Options] that the cobra wiring in package main fills from the command
// line, then Complete, Validate and Run.
package apply
