package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes rows as the benchmark's JSON array.
func WriteJSON(w io.Writer, rows []Row) error {
	if rows == nil {
		rows = []Row{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rows)
}

// WriteTable writes rows as an aligned table with the ratio total/lowerBound
// and each row's standing under [RuleWithinDowntimeLimit] ("within limit":
// yes, over by how much, or "-" for a run that did not complete).
func WriteTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "profile\tpolicy\tcaps\toutcome\tmode\ttotal s\tlower s\ttotal/lower\tdowntime ms\tlimit ms\twithin limit\tsent GB\tsent/M\tdecision s\tmax thr %\tthr CPU-s\tpost-copy s\t")
	for _, r := range rows {
		down := "-"
		if r.DowntimeMs != nil {
			down = fmt.Sprintf("%.0f", *r.DowntimeMs)
		}
		sentM := 0.0
		if r.MemoryBytes > 0 {
			sentM = float64(r.BytesSent) / float64(r.MemoryBytes)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.1f\t%.1f\t%.2f\t%s\t%.0f\t%s\t%.1f\t%.2f\t%.1f\t%d\t%.1f\t%.1f\t\n",
			r.Profile, r.Policy, r.Capabilities, r.Outcome, r.Mode, r.TotalSeconds, r.LowerBoundSeconds, r.Ratio(),
			down, r.DowntimeLimitMs, limitCell(r), float64(r.BytesSent)/1e9, sentM, r.DecisionSeconds, r.MaxThrottlePercent,
			r.ThrottleCPUSeconds, r.PostCopySeconds)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	over := 0
	for _, r := range rows {
		if r.Standing() == StandingOverLimit {
			over++
		}
	}
	fmt.Fprintf(w, "\nwithin limit: rule %s, a run succeeds only if its pause stayed within the configured downtime limit; %d of %d runs succeeded over it\n",
		RuleWithinDowntimeLimit, over, len(rows))
	// Reasons are long; list them after the table.
	fmt.Fprintln(w)
	for _, r := range rows {
		rule := ""
		if r.Rule != "" {
			rule = "[" + r.Rule + "] "
		}
		fmt.Fprintf(w, "%s/%s: %s%s\n", r.Profile, r.Policy, rule, oneLine(r.Reason))
	}
	return nil
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// guestCost is the row's cost to the guest in words.
func guestCost(r Row) string {
	return fmt.Sprintf("throttle %.0f CPU-s, post-copy %.0f s", r.ThrottleCPUSeconds, r.PostCopySeconds)
}
