// Package ocitest starts Debian's docker-registry (the CNCF
// distribution registry) on loopback for tests and benchmarks, and builds
// containerDisk images (a disk under /disk/) to push to it.
package ocitest
