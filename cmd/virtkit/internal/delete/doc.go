// Package delete is `virtkit delete`: kubectl's delete over the CLI's two
// transports, the API (KIND NAME... or the objects of manifests, each
// failure reported and the others still deleted) and a store (KIND
// NAME...). Like package get, it is an [Options] that the cobra wiring in
// package main fills from the command line, then Complete, Validate and
// Run.
package delete
