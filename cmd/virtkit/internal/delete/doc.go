// Package delete is `virtkit delete`: kubectl's delete through the control
// plane's API (KIND NAME... or the objects of manifests, each failure
// reported and the others still deleted). Like package get, it is an
// [Options] that the cobra wiring in package main fills from the command
// line, then Complete, Validate and Run.
package delete
