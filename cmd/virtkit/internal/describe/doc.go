// Package describe is `virtkit describe`: kubectl's describe for custom
// resources over the API. Each object is printed field by field (name,
// namespace, labels and annotations, then metadata, spec and status), then
// the events that regard it, oldest first. Like package get, it is an
// [Options] that the cobra wiring in package main fills from the command
// line, then Complete, Validate and Run.
package describe
