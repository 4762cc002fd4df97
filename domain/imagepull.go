package domain

import "errors"

// ErrImagePull is wrapped by a VolumeResolver or KernelResolver that could
// not pull a container image. The node agent reports it as KubeVirt does
// (Synchronized=False, reason ErrImagePull, then ImagePullBackOff) and
// retries with backoff instead of failing the VMI.
var ErrImagePull = errors.New("image pull failed")
