package domain_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/virtkit/virtkit/domain"
)

// A downward metrics disk written the way the node writes it and read back
// the way a guest's vhostmd client reads it.
func ExampleWriteVhostmd() {
	dir, err := os.MkdirTemp("", "vhostmd")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	f, err := os.Create(filepath.Join(dir, "vhostmd0"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	err = domain.WriteVhostmd(f, domain.Metrics{Metrics: []domain.Metric{
		domain.StringMetric(domain.MetricContextHost, "HostName", "node-a"),
		domain.UintMetric(domain.MetricContextVM, "ResourceMemoryLimit", "KiB", 524288),
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := domain.ReadVhostmd(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, x := range m.Metrics {
		fmt.Printf("%s %s=%s%s\n", x.Context, x.Name, x.Text(), x.Unit)
	}
	// Output:
	// host HostName=node-a
	// vm ResourceMemoryLimit=524288KiB
}
