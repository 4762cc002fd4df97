//go:build tools

// Package deps pins the module's dependencies before code uses them.
package deps

import (
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/spf13/cobra"
	_ "github.com/stretchr/testify/require"
	_ "go.etcd.io/etcd/client/v3"
	_ "go.etcd.io/etcd/server/v3/embed"
	_ "golang.org/x/sync/errgroup"
	_ "k8s.io/apimachinery/pkg/apis/meta/v1"
	_ "k8s.io/client-go/util/workqueue"
	_ "libvirt.org/go/libvirt"
	_ "libvirt.org/go/libvirtxml"
	_ "sigs.k8s.io/yaml"
)
