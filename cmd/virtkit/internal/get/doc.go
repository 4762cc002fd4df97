// Package get is `virtkit get`: kubectl's get through the control plane's
// API, printing the server's Tables (any kind it serves) or its objects.
//
// It is the pattern of the CLI's commands in packages of their own, as
// kubectl keeps them: an [Options] holding everything the command takes,
// filled from the command line by its cobra wiring in package main, then
// Complete (what the arguments say), Validate (the combination) and Run
// (against the API main connected: the one a kubeconfig names, or one
// main started in its own process over a store). The shared pieces are
// packages beside it: term (escaping untrusted text for the terminal) and
// kube (the API connection as the commands need it).
package get
