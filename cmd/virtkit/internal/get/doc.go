// Package get is `virtkit get`: kubectl's get through the control plane's
// API (the server's Tables, any kind it serves), whether the API is
// reached through a kubeconfig or served inside the process over a store.
//
// It is the pattern of the CLI's commands in packages of their own, as
// kubectl keeps them: an [Options] holding everything the command takes,
// filled from the command line by its cobra wiring in package main, then
// Complete (what the arguments say), Validate (the combination) and Run
// (against the connection main made). The shared pieces are packages
// beside it: term (escaping untrusted text for the terminal) and kube (the
// API connection as the commands need it).
package get
