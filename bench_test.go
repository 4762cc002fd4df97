package virtkit

import (
	"testing"
)

// typicalVMManifest is a VM as users write it: run strategy, labels, a
// container disk, cloud-init, a masquerade interface, resources.
const typicalVMManifest = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: web-1
  namespace: prod
  labels:
    app: web
    kubevirt.io/vm: web-1
spec:
  runStrategy: Always
  template:
    metadata:
      labels:
        app: web
        kubevirt.io/vm: web-1
    spec:
      domain:
        cpu:
          cores: 2
        resources:
          requests:
            memory: 1Gi
            cpu: "1"
          limits:
            memory: 1Gi
            cpu: "2"
        devices:
          disks:
          - name: root
            disk:
              bus: virtio
            bootOrder: 1
          - name: cloudinit
            disk:
              bus: virtio
          interfaces:
          - name: default
            masquerade: {}
            ports:
            - name: http
              port: 80
          rng: {}
      evictionStrategy: LiveMigrate
      terminationGracePeriodSeconds: 30
      networks:
      - name: default
        pod: {}
      nodeSelector:
        kubernetes.io/arch: amd64
      volumes:
      - name: root
        containerDisk:
          image: quay.io/containerdisks/fedora:41
      - name: cloudinit
        cloudInitNoCloud:
          userData: |
            #cloud-config
            password: fedora
            chpasswd: { expire: False }
`

func BenchmarkDecodeDefaultValidate(b *testing.B) {
	data := []byte(typicalVMManifest)
	opts := DefaultOptions{NewUUID: fixedUUID}
	b.ReportAllocs()
	for b.Loop() {
		objs, err := DecodeBytes(data)
		if err != nil || len(objs) != 1 {
			b.Fatalf("decode: %v", err)
		}
		opts.SetDefaults(objs[0])
		if errs := Validate(objs[0]); len(errs) > 0 {
			b.Fatalf("validate: %v", errs)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	data := []byte(typicalVMManifest)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeBytes(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	objs, err := DecodeBytes([]byte(typicalVMManifest))
	if err != nil {
		b.Fatal(err)
	}
	SetDefaults(objs[0])
	b.ReportAllocs()
	for b.Loop() {
		if errs := Validate(objs[0]); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}
