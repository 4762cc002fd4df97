package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
)

// printEvents writes `kubectl get events`: oldest last observation first,
// a repeated event's LAST SEEN as "5m (x3 over 10m)".
func printEvents(w io.Writer, evs []virtkit.Event, now time.Time) {
	sort.SliceStable(evs, func(i, j int) bool {
		a, b := evs[i].LastSeen(), evs[j].LastSeen()
		if !a.Equal(&b) {
			return a.Before(&b)
		}
		return evs[i].Namespace+"/"+evs[i].Name < evs[j].Namespace+"/"+evs[j].Name
	})
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tLAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE")
	for i := range evs {
		e := &evs[i]
		seen := age(e.LastSeen(), now)
		if n := e.Count(); n > 1 {
			seen = fmt.Sprintf("%s (x%d over %s)", seen, n, age(metav1.NewTime(e.EventTime.Time), now))
		}
		obj := strings.ToLower(e.Regarding.Kind) + "/" + e.Regarding.Name
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", esc(e.Namespace), seen, esc(e.Type), esc(e.Reason), esc(obj), esc(e.Note))
	}
	tw.Flush()
}
