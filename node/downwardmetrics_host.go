package node

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/virtkit/virtkit/domain"
)

// maxProcFile bounds one read of a proc or sys file.
const maxProcFile = 1 << 20

// userHZ is the unit of /proc/stat's CPU times (USER_HZ, 100 on Linux).
const userHZ = 100

func readBounded(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxProcFile))
}

// procFields reads "key value..." lines (meminfo, vmstat) into key→first
// number; sep ends the key (":" for meminfo, " " for vmstat).
func procFields(p, sep string) (map[string]uint64, error) {
	b, err := readBounded(p)
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, rest, ok := strings.Cut(sc.Text(), sep)
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		if v, err := strconv.ParseUint(f[0], 10, 64); err == nil {
			out[strings.TrimSpace(k)] = v
		}
	}
	return out, nil
}

// hostDownwardMetrics are the host's metrics KubeVirt publishes: physical
// CPU packages, CPU time, memory (KiB) and paging (KiB).
func hostDownwardMetrics(o DownwardMetricsOptions) []domain.Metric {
	host := domain.MetricContextHost
	var ms []domain.Metric
	if n := physicalPackages(o.SysDir); n > 0 {
		ms = append(ms, domain.IntMetric(host, "NumberOfPhysicalCPUs", "", int64(n)))
	}
	if t, ok := hostCPUSeconds(o.ProcDir); ok {
		ms = append(ms, domain.RealMetric(host, "TotalCPUTime", "s", t))
	}
	if mi, err := procFields(filepath.Join(o.ProcDir, "meminfo"), ":"); err == nil {
		free, swapFree, total, swapTotal := mi["MemFree"], mi["SwapFree"], mi["MemTotal"], mi["SwapTotal"]
		buffers, cached, swapCached := mi["Buffers"], mi["Cached"], mi["SwapCached"]
		ms = append(ms,
			domain.UintMetric(host, "FreePhysicalMemory", "KiB", free),
			domain.UintMetric(host, "FreeVirtualMemory", "KiB", free+swapFree),
			domain.UintMetric(host, "MemoryAllocatedToVirtualServers", "KiB", sub(total, free+buffers+cached)),
			domain.UintMetric(host, "UsedVirtualMemory", "KiB", sub(total+swapTotal, free+cached+buffers+swapCached)),
		)
	}
	if vs, err := procFields(filepath.Join(o.ProcDir, "vmstat"), " "); err == nil {
		page := uint64(os.Getpagesize())
		ms = append(ms,
			domain.UintMetric(host, "PagedInMemory", "KiB", vs["pswpin"]*page/1024),
			domain.UintMetric(host, "PagedOutMemory", "KiB", vs["pswpout"]*page/1024),
		)
	}
	return ms
}

func sub(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

// physicalPackages counts the distinct physical package ids of the CPUs.
func physicalPackages(sysDir string) int {
	ids, _ := filepath.Glob(filepath.Join(sysDir, "devices", "system", "cpu", "cpu[0-9]*", "topology", "physical_package_id"))
	seen := map[string]bool{}
	for _, p := range ids {
		if b, err := readBounded(p); err == nil {
			seen[strings.TrimSpace(string(b))] = true
		}
	}
	return len(seen)
}

// hostCPUSeconds is user + nice + system time of all CPUs, in seconds.
func hostCPUSeconds(procDir string) (float64, bool) {
	b, err := readBounded(filepath.Join(procDir, "stat"))
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[0] != "cpu" {
			continue
		}
		var sum uint64
		for _, s := range f[1:4] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return 0, false
			}
			sum += v
		}
		return float64(sum) / userHZ, true
	}
	return 0, false
}
