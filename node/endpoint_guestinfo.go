package node

import (
	"encoding/json"
	"net/http"
)

// GuestInfoObject answers KubeVirt's guest-agent subresources (verb
// guestosinfo, userlist or filesystemlist) of a VMI this agent runs, in
// KubeVirt's shapes: VirtualMachineInstanceGuestAgentInfo,
// VirtualMachineInstanceGuestOSUserList and
// VirtualMachineInstanceFileSystemList.
func (a *Agent) GuestInfoObject(verb, namespace, name string) (any, error) {
	switch verb {
	case "userlist":
		users, err := a.UserList(namespace, name)
		if err != nil {
			return nil, err
		}
		return map[string]any{"kind": "VirtualMachineInstanceGuestOSUserList", "apiVersion": "kubevirt.io/v1", "items": users}, nil
	case "filesystemlist":
		fs, err := a.FilesystemList(namespace, name)
		if err != nil {
			return nil, err
		}
		return map[string]any{"kind": "VirtualMachineInstanceFileSystemList", "apiVersion": "kubevirt.io/v1", "items": fs}, nil
	}
	gi, err := a.GuestOSInfo(namespace, name)
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"kind": "VirtualMachineInstanceGuestAgentInfo", "apiVersion": "kubevirt.io/v1",
		"hostname": gi.Hostname, "os": gi.OS, "timezone": gi.Timezone,
		"userList": gi.Users, "fsInfo": map[string]any{"disks": gi.Filesystems},
		"fsFreezeStatus": gi.FSFreezeStatus,
	}, nil
}

func (e *Endpoint) serveGuestInfo(w http.ResponseWriter, req endpointRequest) {
	v, err := e.a.GuestInfoObject(req.verb, req.namespace, req.name)
	if err != nil {
		http.Error(w, err.Error(), errorCode(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
