package cluster_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

// Export a stopped VM's disk with KubeVirt's VirtualMachineExport: once
// the export is Ready its status holds the links, raw and gzip, with the
// CA of the export server, and the token Secret the export made holds the
// token a download presents.
func Example_exportVM() {
	ctx, c, stop, err := startAndApply(60*time.Second, `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: web
spec:
  runStrategy: Halted
  dataVolumeTemplates:
  - metadata: {name: web-root}
    spec:
      source: {blank: {}}
      storage: {resources: {requests: {storage: 1Mi}}}
  template:
    spec:
      domain:
        devices:
          disks: [{name: root, disk: {bus: virtio}}]
        resources: {requests: {memory: 64Mi}}
      volumes: [{name: root, dataVolume: {name: web-root}}]
---
apiVersion: export.kubevirt.io/v1
kind: VirtualMachineExport
metadata:
  name: web-export
spec:
  source: {apiGroup: kubevirt.io, kind: VirtualMachine, name: web}
  ttlDuration: 1h
`)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	exp, err := cluster.WaitFor(ctx, c.Store(), store.Key{Namespace: "default", Name: "web-export"},
		func() *virtkit.VirtualMachineExport { return &virtkit.VirtualMachineExport{} }, &virtkit.VirtualMachineExportList{},
		func(e *virtkit.VirtualMachineExport, found bool) bool {
			return found && e.Status != nil && e.Status.Phase == virtkit.ExportReady
		})
	if err != nil {
		fmt.Println(err)
		return
	}
	secret := &corev1.Secret{}
	if err := c.Store().Get(ctx, store.Key{Namespace: "default", Name: *exp.Status.TokenSecretRef}, secret); err != nil {
		fmt.Println(err)
		return
	}
	link := exp.Status.Links.External
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(link.Cert))
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	vol := link.Volumes[0]
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, vol.Formats[0].URL, nil)
	req.Header.Set(virtkit.ExportTokenHeader, string(secret.Data[virtkit.ExportTokenKey]))
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	n, _ := io.Copy(io.Discard, resp.Body)
	fmt.Println(exp.Status.Phase, *exp.Status.TokenSecretRef, vol.Name, vol.Formats[0].Format, resp.Status, n)
	// Output: Ready export-token-web-export web-root raw 200 OK 1048576
}
