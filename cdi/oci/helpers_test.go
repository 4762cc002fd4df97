package oci_test

import "net/netip"

// loopback lets tests reach their registries on loopback, which the address
// policy refuses by default.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
