package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/virtkit/virtkit"
)

// printDataVolumes writes `kubectl get datavolumes` (CDI's columns).
func printDataVolumes(w io.Writer, dvs []virtkit.DataVolume, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tPHASE\tPROGRESS\tRESTARTS\tAGE")
	for _, dv := range dvs {
		progress := string(dv.Status.Progress)
		if progress == "" {
			progress = string(virtkit.ProgressNotAvailable)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", esc(dv.Namespace), esc(dv.Name), esc(string(dv.Status.Phase)), esc(progress),
			dv.Status.RestartCount, age(dv.CreationTimestamp, now))
	}
	tw.Flush()
}
