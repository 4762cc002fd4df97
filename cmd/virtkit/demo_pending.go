package main

// The demo's migration step belongs to the migration lifecycle, which is
// still being written; until then the walk skips it.
