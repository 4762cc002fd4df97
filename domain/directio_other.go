//go:build !linux

package domain

// probeDirectIO cannot tell outside Linux; the builder then picks
// writethrough, which works everywhere.
func probeDirectIO(string) DirectIO { return DirectIOUnknown }
