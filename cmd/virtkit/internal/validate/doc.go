// Package validate is `virtkit validate`: manifests decoded strictly,
// defaulted and run through the admission chain of a user's create (the
// one the library's Apply and the API server run), a VirtualMachine's
// instance type and preference resolved against the given paths and
// KubeVirt's common catalogue. It prints one [Finding] per good object or
// problem, as text or JSON.
//
// Like package get, it is an [Options] that the cobra wiring in package
// main fills from the command line, then Complete, Validate and Run; Run
// returns [ErrProblems] after printing when there was any problem, which
// main turns into exit status 1.
package validate
