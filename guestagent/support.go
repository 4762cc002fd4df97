package guestagent

import (
	"regexp"
	"slices"
)

// RequiredCommands are the commands KubeVirt requires before it calls an
// agent supported (virt-handler's AgentVersionNotSupported check).
var requiredCommands = []string{
	CmdPing, CmdGetTime, CmdInfo, CmdShutdown, CmdNetworkInterfaces,
	CmdGetFSInfo, CmdGetHostName, CmdGetUsers, CmdGetTimezone, CmdGetOSInfo,
}

// RequiredCommands returns KubeVirt's basic required command list.
func RequiredCommands() []string { return slices.Clone(requiredCommands) }

// DefaultSupportedVersions are KubeVirt's supportedGuestAgentVersions, used
// only when an agent reports no command list.
func DefaultSupportedVersions() []string { return []string{"2.*", "3.*", "4.*", "5.*"} }

// MissingRequiredCommands returns the required commands (RequiredCommands,
// plus extra, e.g. the guest-ssh-* set when SSH credentials are propagated
// through the agent) that info does not list or lists disabled, in
// required-list order. nil means the agent is supported.
func MissingRequiredCommands(info Info, extra ...string) []string {
	var missing []string
	for _, name := range slices.Concat(requiredCommands, extra) {
		if c, ok := info.Command(name); !ok || !c.Enabled {
			if !slices.Contains(missing, name) {
				missing = append(missing, name)
			}
		}
	}
	return missing
}

// VersionSupported is KubeVirt's fallback for agents that report no command
// list: whether version matches one of the patterns (regular expressions,
// DefaultSupportedVersions when none are given). Unlike KubeVirt, which
// matches them unanchored (so "7.2" matches "2.*"), the patterns are anchored
// at the start of the version. An invalid pattern matches nothing.
func VersionSupported(version string, patterns ...string) bool {
	if len(patterns) == 0 {
		patterns = DefaultSupportedVersions()
	}
	for _, p := range patterns {
		re, err := regexp.Compile("^(?:" + p + ")")
		if err == nil && re.MatchString(version) {
			return true
		}
	}
	return false
}

// AgentSupported combines both checks the way KubeVirt does: with a command
// list, no required command may be missing; without one, the version must
// match a supported pattern.
func AgentSupported(info Info, extra ...string) bool {
	if len(info.SupportedCommands) == 0 {
		return VersionSupported(info.Version)
	}
	return len(MissingRequiredCommands(info, extra...)) == 0
}
