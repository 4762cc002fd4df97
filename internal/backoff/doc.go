// Package backoff computes retry delays that the controllers persist in
// object status, so they survive restarts and are the same on every
// replica. Randomness is injected so tests are deterministic.
package backoff
