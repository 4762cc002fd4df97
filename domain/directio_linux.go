package domain

import "syscall"

// probeDirectIO reports whether p can be opened with O_DIRECT, which cache
// mode none needs (tmpfs, for one, refuses it).
func probeDirectIO(p string) DirectIO {
	fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_DIRECT|syscall.O_CLOEXEC, 0)
	if err != nil {
		if err == syscall.EINVAL {
			return DirectIONo
		}
		return DirectIOUnknown
	}
	_ = syscall.Close(fd)
	return DirectIOYes
}
