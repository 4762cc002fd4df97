package virtkit

import (
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// The UUID helpers are here because the object model may import only the
// standard library and apimachinery.

func parseUUID(s string) ([16]byte, error) {
	var u [16]byte
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, fmt.Errorf("invalid UUID %q", s)
	}
	h := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	if _, err := hex.Decode(u[:], []byte(h)); err != nil {
		return u, fmt.Errorf("invalid UUID %q: %w", s, err)
	}
	return u, nil
}

func formatUUID(u [16]byte) string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:])
}

// FirmwareUUIDForVM returns the stable firmware UUID KubeVirt derives for a
// VM without one: UUIDv5 (SHA-1) of the VM name in FirmwareUUIDNamespace.
func FirmwareUUIDForVM(vmName string) types.UID {
	ns := firmwareUUIDNamespaceBytes()
	h := sha1.New()
	h.Write(ns[:])
	h.Write([]byte(vmName))
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = (u[6] & 0x0f) | 0x50
	u[8] = (u[8] & 0x3f) | 0x80
	return types.UID(formatUUID(u))
}

// RandomUUID returns a random (version 4) UUID.
func RandomUUID() types.UID {
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read never fails on supported platforms
	u[6] = (u[6] & 0x0f) | 0x40
	u[8] = (u[8] & 0x3f) | 0x80
	return types.UID(formatUUID(u))
}

// IsValidUUID reports whether s is a canonical textual UUID.
func IsValidUUID(s string) bool {
	_, err := parseUUID(s)
	return err == nil
}

// firmwareUUIDNamespaceBytes is FirmwareUUIDNamespace in binary (a test
// checks the two agree).
func firmwareUUIDNamespaceBytes() [16]byte {
	return [16]byte{0x6a, 0x1a, 0x24, 0xa1, 0x40, 0x61, 0x46, 0x07, 0x8b, 0xf4, 0xa3, 0x96, 0x3d, 0x0c, 0x58, 0x95}
}
