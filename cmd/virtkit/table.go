package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
)

// age renders a duration the way kubectl does: 45s, 3m12s, 2h5m, 3d.
func age(created metav1.Time, now time.Time) string {
	if created.IsZero() {
		return "<unknown>"
	}
	d := now.Sub(created.Time)
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < time.Hour:
		m := int(d.Minutes())
		if s := int(d.Seconds()) % 60; s != 0 && m < 10 {
			return fmt.Sprintf("%dm%ds", m, s)
		}
		return fmt.Sprintf("%dm", m)
	case d < 48*time.Hour:
		h := int(d.Hours())
		if m := int(d.Minutes()) % 60; m != 0 && h < 8 {
			return fmt.Sprintf("%dh%dm", h, m)
		}
		return fmt.Sprintf("%dh", h)
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func boolWord(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// printVMs writes `kubectl get vms`.
func printVMs(w io.Writer, vms []virtkit.VirtualMachine, now time.Time) {
	sort.Slice(vms, func(i, j int) bool { return vms[i].Namespace+"/"+vms[i].Name < vms[j].Namespace+"/"+vms[j].Name })
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tAGE\tSTATUS\tREADY")
	for _, vm := range vms {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", esc(vm.Namespace), esc(vm.Name), age(vm.CreationTimestamp, now),
			esc(string(vm.Status.PrintableStatus)), boolWord(vm.Status.Ready))
	}
	tw.Flush()
}

// printVMIs writes `kubectl get vmis`.
func printVMIs(w io.Writer, vmis []virtkit.VirtualMachineInstance, now time.Time) {
	sort.Slice(vmis, func(i, j int) bool {
		return vmis[i].Namespace+"/"+vmis[i].Name < vmis[j].Namespace+"/"+vmis[j].Name
	})
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tAGE\tPHASE\tIP\tNODENAME\tREADY")
	for _, vmi := range vmis {
		ip := ""
		if len(vmi.Status.Interfaces) > 0 {
			ip = vmi.Status.Interfaces[0].IP
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", esc(vmi.Namespace), esc(vmi.Name), age(vmi.CreationTimestamp, now),
			esc(string(vmi.Status.Phase)), esc(ip), esc(vmi.Status.NodeName), boolWord(vmi.IsReady()))
	}
	tw.Flush()
}

// printReplicaSets writes `kubectl get vmirs`.
func printReplicaSets(w io.Writer, rss []virtkit.VirtualMachineInstanceReplicaSet, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tDESIRED\tCURRENT\tREADY\tAGE")
	for _, rs := range rss {
		desired := int32(1)
		if rs.Spec.Replicas != nil {
			desired = *rs.Spec.Replicas
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\n", esc(rs.Namespace), esc(rs.Name), desired, rs.Status.Replicas,
			rs.Status.ReadyReplicas, age(rs.CreationTimestamp, now))
	}
	tw.Flush()
}

// printNodes writes `kubectl get nodes`.
func printNodes(w io.Writer, nodes []virtkit.Node, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATUS\tHYPERVISOR\tCPU\tMEMORY\tAGE")
	for _, n := range nodes {
		status := "NotReady"
		if virtkit.IsConditionTrue(n.Status.Conditions, virtkit.NodeReady) {
			status = "Ready"
		}
		if n.Spec.Unschedulable {
			status += ",SchedulingDisabled"
		}
		cpu, mem := n.Status.Capacity[virtkit.ResourceCPU], n.Status.Capacity[virtkit.ResourceMemory]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1fGi\t%s\n", esc(n.Name), status, esc(n.Status.Hypervisor), cpu.String(),
			float64(mem.Value())/(1<<30), age(n.CreationTimestamp, now))
	}
	tw.Flush()
}

// indent prefixes every line of s.
func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		if lines[i] != "" {
			lines[i] = prefix + lines[i]
		}
	}
	return strings.Join(lines, "\n") + "\n"
}
