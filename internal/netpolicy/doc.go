// Package netpolicy decides which addresses a node may dial on a tenant's
// behalf (an import URL and each of its redirects, a registry, a guest
// port): loopback, link-local (with the cloud metadata address
// 169.254.169.254), unspecified and multicast addresses and the node's own
// addresses are refused unless an operator allows their network
// explicitly. [Policy.Control] enforces it on the resolved address at
// dial time, so DNS rebinding cannot bypass it.
package netpolicy
