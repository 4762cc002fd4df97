package virtkit

import "encoding/json"

// The MarshalJSON methods below encode as encoding/json does without them.
// They exist for structured-merge-diff, which tracks the fields each
// manager owns (server-side apply, managedFields) by reading Go values
// through reflection and cannot read a uint64 field; a type that marshals
// itself is read through its JSON instead. Each type here holds a uint64
// field directly.

// MarshalJSON encodes s as encoding/json does (see above).
func (s VirtualMachineInstanceStatus) MarshalJSON() ([]byte, error) {
	type plain VirtualMachineInstanceStatus
	return json.Marshal(plain(s))
}

// MarshalJSON encodes c as encoding/json does (see above).
func (c MigrationConfiguration) MarshalJSON() ([]byte, error) {
	type plain MigrationConfiguration
	return json.Marshal(plain(c))
}

// MarshalJSON encodes s as encoding/json does (see above).
func (s MigrationPolicySpec) MarshalJSON() ([]byte, error) {
	type plain MigrationPolicySpec
	return json.Marshal(plain(s))
}
