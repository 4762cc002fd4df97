// Package get is `virtkit get`: kubectl's get over virtkit's two
// transports, the API (the server's Tables, any kind it serves) and a
// store (the same printer columns, package printers, built locally).
//
// It is the pattern of the CLI's commands in packages of their own, as
// kubectl keeps them: an [Options] holding everything the command takes,
// filled from the command line by its cobra wiring in package main, then
// Complete (what the arguments say), Validate (the combination) and Run
// (against the transport main connected). The shared pieces are packages
// beside it: term (escaping untrusted text for the terminal) and kube (the
// API connection as the commands need it).
package get
