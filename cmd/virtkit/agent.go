package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit/guestagent"
)

// agentCall runs one guest-agent query and returns the decoded reply (for
// json output, with QGA's field names) and its text rendering.
type agentCall func(ctx context.Context, c *guestagent.Client) (reply any, text func(io.Writer) error, err error)

// agentCalls are the queries `virtkit agent` offers; all are read-only.
var agentCallNames = []string{"ping", "info", "osinfo", "hostname", "users", "fsinfo", "interfaces", "timezone", "time"}

func agentCallFor(name string) (agentCall, bool) {
	switch name {
	case "ping":
		return func(ctx context.Context, c *guestagent.Client) (any, func(io.Writer) error, error) {
			err := c.Ping(ctx)
			return struct{}{}, textLines("ok"), err
		}, true
	case "info":
		return func(ctx context.Context, c *guestagent.Client) (any, func(io.Writer) error, error) {
			info, err := c.Info(ctx)
			return info, func(w io.Writer) error { return printAgentInfo(w, info) }, err
		}, true
	case "osinfo":
		return func(ctx context.Context, c *guestagent.Client) (any, func(io.Writer) error, error) {
			os, err := c.OSInfo(ctx)
			return os, func(w io.Writer) error { return printOSInfo(w, os) }, err
		}, true
	case "hostname":
		return func(ctx context.Context, c *guestagent.Client) (any, func(io.Writer) error, error) {
			h, err := c.HostName(ctx)
			return guestagent.HostNameReply{HostName: h}, textLines(h), err
		}, true
	case "users":
		return func(ctx context.Context, c *guestagent.Client) (any, func(io.Writer) error, error) {
			users, err := c.Users(ctx)
			return nonNilSlice(users), func(w io.Writer) error { return printUsers(w, users) }, err
		}, true
	case "fsinfo":
		return func(ctx context.Context, c *guestagent.Client) (any, func(io.Writer) error, error) {
			fs, err := c.FSInfo(ctx)
			return nonNilSlice(fs), func(w io.Writer) error { return printFilesystems(w, fs) }, err
		}, true
	case "interfaces":
		return func(ctx context.Context, c *guestagent.Client) (any, func(io.Writer) error, error) {
			ifs, err := c.NetworkInterfaces(ctx)
			return nonNilSlice(ifs), func(w io.Writer) error { return printInterfaces(w, ifs) }, err
		}, true
	case "timezone":
		return func(ctx context.Context, c *guestagent.Client) (any, func(io.Writer) error, error) {
			tz, err := c.Timezone(ctx)
			return tz, textLines(fmt.Sprintf("%s %s", clean(tz.Zone), formatOffset(tz.Offset))), err
		}, true
	case "time":
		return func(ctx context.Context, c *guestagent.Client) (any, func(io.Writer) error, error) {
			t, err := c.Time(ctx)
			// QGA returns nanoseconds since the epoch.
			return t.UnixNano(), textLines(t.Format(time.RFC3339Nano)), err
		}, true
	}
	return nil, false
}

func newAgentCmd() *cobra.Command {
	var (
		socket  string
		output  string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "agent --socket PATH <" + strings.Join(agentCallNames, "|") + ">",
		Short: "Query a QEMU guest agent over its unix socket",
		Long: "agent sends one read-only query to a QEMU guest agent: the host side of a guest's\n" +
			"org.qemu.guest_agent.0 channel, or qemu-ga -m unix-listen. The reply comes from\n" +
			"the guest and is untrusted: it is size-bounded, and text output escapes it.",
		Args:      cobra.ExactArgs(1),
		ValidArgs: agentCallNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			call, ok := agentCallFor(args[0])
			if !ok {
				return fmt.Errorf("agent: unknown query %q (want one of %s)", args[0], strings.Join(agentCallNames, ", "))
			}
			if socket == "" {
				return fmt.Errorf("agent: --socket: required")
			}
			if output != "json" && output != "text" {
				return fmt.Errorf("agent: --output %q: want json or text", output)
			}
			if timeout <= 0 {
				return fmt.Errorf("agent: --timeout %s: must be positive", timeout)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			tr := guestagent.DialUnix(socket, guestagent.Options{})
			defer func() { _ = tr.Close() }()
			reply, text, err := call(ctx, guestagent.New(tr, guestagent.Options{}))
			if err != nil {
				return fmt.Errorf("agent %s: %w", args[0], err)
			}
			out := cmd.OutOrStdout()
			if output == "json" {
				enc := json.NewEncoder(jsonEscaper{W: out})
				enc.SetIndent("", "  ")
				return enc.Encode(reply)
			}
			return text(out)
		},
	}
	cmd.Flags().StringVar(&socket, "socket", "", "unix socket of the guest agent (required)")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: json or text")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "deadline of the whole call")
	return cmd
}

// clean makes guest text safe for a terminal.
func clean(s string) string { return guestagent.Sanitize(s, 256) }

func textLines(lines ...string) func(io.Writer) error {
	return func(w io.Writer) error {
		for _, l := range lines {
			if _, err := fmt.Fprintln(w, clean(l)); err != nil {
				return err
			}
		}
		return nil
	}
}

func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func formatOffset(seconds int) string {
	sign := '+'
	if seconds < 0 {
		sign, seconds = '-', -seconds
	}
	return fmt.Sprintf("%c%02d%02d", sign, seconds/3600, seconds%3600/60)
}

func agentTable(w io.Writer, header string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		for i := range r {
			r[i] = clean(r[i])
		}
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

func printAgentInfo(w io.Writer, info guestagent.Info) error {
	if _, err := fmt.Fprintf(w, "version: %s\n", clean(info.Version)); err != nil {
		return err
	}
	if missing := guestagent.MissingRequiredCommands(info); len(missing) > 0 {
		fmt.Fprintf(w, "missing required commands: %s\n", clean(strings.Join(missing, ", ")))
	}
	cmds := slices.Clone(info.SupportedCommands)
	slices.SortFunc(cmds, func(a, b guestagent.CommandInfo) int { return strings.Compare(a.Name, b.Name) })
	var rows [][]string
	for _, c := range cmds {
		rows = append(rows, []string{c.Name, strconv.FormatBool(c.Enabled)})
	}
	return agentTable(w, "COMMAND\tENABLED", rows)
}

func printOSInfo(w io.Writer, os guestagent.OSInfo) error {
	rows := [][]string{
		{"name:", os.Name}, {"pretty-name:", os.PrettyName}, {"id:", os.ID}, {"version:", os.Version},
		{"version-id:", os.VersionID}, {"variant:", os.Variant}, {"kernel-release:", os.KernelRelease},
		{"kernel-version:", os.KernelVersion}, {"machine:", os.Machine},
	}
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	for _, r := range rows {
		if r[1] != "" {
			fmt.Fprintf(tw, "%s\t%s\n", r[0], clean(r[1]))
		}
	}
	return tw.Flush()
}

func printUsers(w io.Writer, users []guestagent.User) error {
	var rows [][]string
	for _, u := range users {
		sec, frac := int64(u.LoginTime), u.LoginTime-float64(int64(u.LoginTime))
		login := time.Unix(sec, int64(frac*1e9)).UTC().Format(time.RFC3339)
		rows = append(rows, []string{u.User, u.Domain, login})
	}
	return agentTable(w, "USER\tDOMAIN\tLOGIN", rows)
}

func printFilesystems(w io.Writer, fs []guestagent.FSInfo) error {
	var rows [][]string
	size := func(p *uint64) string {
		if p == nil {
			return "-"
		}
		return strconv.FormatUint(*p, 10)
	}
	for _, f := range fs {
		rows = append(rows, []string{f.Mountpoint, f.Type, f.Name, size(f.UsedBytes), size(f.TotalBytes)})
	}
	return agentTable(w, "MOUNTPOINT\tTYPE\tDEVICE\tUSED\tTOTAL", rows)
}

func printInterfaces(w io.Writer, ifs []guestagent.NetworkInterface) error {
	var rows [][]string
	for _, i := range ifs {
		var addrs []string
		for _, a := range i.IPAddresses {
			addrs = append(addrs, a.Address+"/"+strconv.Itoa(a.Prefix))
		}
		rows = append(rows, []string{i.Name, i.HardwareAddress, strings.Join(addrs, ",")})
	}
	return agentTable(w, "NAME\tMAC\tADDRESSES", rows)
}
