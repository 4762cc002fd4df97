// Package virtctl is virtctl's verbs in the virtkit CLI: start, stop,
// restart, migrate, migrate-cancel, pause, unpause, soft-reboot and the
// guest-information calls (guestosinfo, userlist, fslist). Each is a call
// of the API's subresources.kubevirt.io/v1 group (migrate-cancel deletes
// the unfinished migration object), made as virtctl makes it.
//
// Like package get, a verb is an [Options] that the cobra wiring in package
// main fills from the command line ([Verbs] lists the subresource verbs),
// then Complete (what the arguments say), Validate (the flags' combination)
// and Run against the API connection main made.
package virtctl
