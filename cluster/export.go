package cluster

import (
	"github.com/virtkit/virtkit/cdi"
	"github.com/virtkit/virtkit/cdi/export"
	"github.com/virtkit/virtkit/controller"
)

// ExportController is the name of the VirtualMachineExport controller.
const ExportController = "export"

// setUpExport adds the VirtualMachineExport controller: its export
// servers listen on loopback and serve only files under the cluster's
// storage directory (the DataVolumes and their snapshots); Start stops
// them when the cluster stops.
func (c *Cluster) setUpExport(rc controller.ReconcilerOptions) error {
	m, err := export.NewManager(export.ManagerOptions{AllowedDirs: []string{c.storage.dir}, Logger: c.opts.Logger})
	if err != nil {
		return err
	}
	eo := controller.ExportOptions{Volumes: &cdi.FileExportVolumes{Classes: c.storage.classes("")}, Servers: m}
	ex, err := controller.NewExportReconciler(rc, eo)
	if err != nil {
		return err
	}
	ctrl := Controller{Name: ExportController, Reconciler: ex, Watches: ex.Watches()}
	if r, ok := c.opts.Replace[ctrl.Name]; ok {
		ctrl.Reconciler = r
		if w, ok := r.(Watcher); ok {
			ctrl.Watches = w.Watches()
		}
	}
	c.exports = m
	return c.addController(ctrl)
}
