package domain_test

import (
	"testing"

	"github.com/virtkit/virtkit/domain"
)

// BenchmarkBuild builds a typical VMI: containerDisk + cloud-init +
// emptyDisk, one pod interface, rng, defaults for the rest.
func BenchmarkBuild(b *testing.B) {
	vmi := decodeVMI(b, "testdata/vmi/typical.yaml")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := domain.Build(vmi, domain.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuildXML adds marshalling to the document.
func BenchmarkBuildXML(b *testing.B) {
	vmi := decodeVMI(b, "testdata/vmi/typical.yaml")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := domain.BuildXML(vmi, domain.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
