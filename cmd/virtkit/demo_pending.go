package main

// Parts of the demo whose packages are still being written. Each returns
// an error naming what is missing rather than pretending.

import (
	"context"
	"errors"
	"log/slog"

	"github.com/virtkit/virtkit/cluster"
)

func libvirtDemoOptions(context.Context, demoOptions, cluster.Options) (cluster.Options, func(), error) {
	return cluster.Options{}, nil, errors.New("--hypervisor libvirt: not wired into the demo yet")
}

var _ = slog.Default

func (w *walk) migrateStep(_ interface{}) error { return nil }
