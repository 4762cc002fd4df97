package oci

import "errors"

// tenantReason is the message of an error that carries none of its own,
// the most specific kind first; "" when err is of no known kind.
func tenantReason(err error) string {
	switch {
	case errors.Is(err, ErrNotFound):
		return "image not found in the registry"
	case errors.Is(err, ErrUnauthorized):
		return "the registry refused the credentials"
	case errors.Is(err, ErrNoCredentials):
		return "the pull secret has no credentials for the registry"
	case errors.Is(err, ErrNoDisk):
		return "the image holds no disk under /disk/"
	case errors.Is(err, ErrNotPresent):
		return "image not present on the node with pull policy Never"
	case errors.Is(err, ErrTooLarge):
		return "the disk in the image exceeds the size limit"
	case errors.Is(err, ErrAddressNotAllowed):
		return "the registry's address is not one the node connects to for tenants"
	case errors.Is(err, ErrPull):
		return "image pull failed (the node's log has the details)"
	}
	return ""
}

// TenantMessage is what a VMI's or DataVolume's status and events say
// about a pull that failed with err, or "" when err is not a pull error.
// The error itself, which may name the node's cache paths or addresses,
// belongs in the node's log.
func TenantMessage(err error) string {
	return tenantReason(err)
}
