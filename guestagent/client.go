package guestagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
)

// Client calls the QEMU guest agent through a Transport. Every call takes
// its deadline from ctx (Options.CallTimeout when ctx has none), decodes the
// reply with the bounds in Options, and returns agent errors as *AgentError.
// A Client is safe for concurrent use.
type Client struct {
	transport Transport
	opts      Options
	ids       atomic.Uint64
}

// New returns a Client over t.
func New(t Transport, opts Options) *Client {
	return &Client{transport: t, opts: opts.withDefaults()}
}

// Options returns the client's options with defaults filled in.
func (c *Client) Options() Options { return c.opts }

type request struct {
	Execute   string `json:"execute"`
	Arguments any    `json:"arguments,omitempty"`
	ID        string `json:"id"`
}

// Execute runs command with args (nil for none) and decodes the reply's
// return value into reply (a pointer, or nil to discard it). Use the typed
// methods where they exist; Execute is for everything else. The sync
// commands belong to the transport and are refused.
func (c *Client) Execute(ctx context.Context, command string, args any, reply any) error {
	req, id, err := c.encode(command, args)
	if err != nil {
		return err
	}
	ctx, cancel := c.withDeadline(ctx)
	defer cancel()
	raw, err := c.transport.Exchange(ctx, req)
	if err != nil {
		return fmt.Errorf("guestagent: %s: %w", command, err)
	}
	return decodeReply(raw, command, id, reply, c.opts)
}

func (c *Client) encode(command string, args any) (req, id []byte, err error) {
	if !validCommandName(command) {
		return nil, nil, fmt.Errorf("guestagent: command %q: %w: not a guest agent command name", command, ErrInvalidArgument)
	}
	if command == CmdSyncDelimited {
		return nil, nil, fmt.Errorf("guestagent: %s: %w: framing belongs to the transport", command, ErrInvalidArgument)
	}
	idStr := "virtkit-" + strconv.FormatUint(c.ids.Add(1), 10)
	if args == nil {
		// What json.Marshal makes of the request: the name and the id need
		// no escaping (validCommandName, digits).
		req = make([]byte, 0, len(`{"execute":"","id":""}`)+len(command)+len(idStr))
		req = append(req, `{"execute":"`...)
		req = append(req, command...)
		req = append(req, `","id":"`...)
		req = append(req, idStr...)
		req = append(req, `"}`...)
		return req, []byte(`"` + idStr + `"`), nil
	}
	req, err = json.Marshal(request{Execute: command, Arguments: args, ID: idStr})
	if err != nil {
		return nil, nil, fmt.Errorf("guestagent: %s: arguments: %w: %w", command, ErrInvalidArgument, err)
	}
	return req, []byte(strconv.Quote(idStr)), nil
}

func (c *Client) withDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.opts.CallTimeout)
}

func validCommandName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// Ping runs guest-ping.
func (c *Client) Ping(ctx context.Context) error {
	return c.Execute(ctx, CmdPing, nil, nil)
}

// Info runs guest-info: the agent version and its commands.
func (c *Client) Info(ctx context.Context) (Info, error) {
	var v Info
	err := c.Execute(ctx, CmdInfo, nil, &v)
	return v, err
}

// OSInfo runs guest-get-osinfo.
func (c *Client) OSInfo(ctx context.Context) (OSInfo, error) {
	var v OSInfo
	err := c.Execute(ctx, CmdGetOSInfo, nil, &v)
	return v, err
}

// HostName runs guest-get-host-name.
func (c *Client) HostName(ctx context.Context) (string, error) {
	var v HostNameReply
	err := c.Execute(ctx, CmdGetHostName, nil, &v)
	return v.HostName, err
}

// Users runs guest-get-users.
func (c *Client) Users(ctx context.Context) ([]User, error) {
	var v []User
	err := c.Execute(ctx, CmdGetUsers, nil, &v)
	return v, err
}

// FSInfo runs guest-get-fsinfo.
func (c *Client) FSInfo(ctx context.Context) ([]FSInfo, error) {
	var v []FSInfo
	err := c.Execute(ctx, CmdGetFSInfo, nil, &v)
	return v, err
}

// NetworkInterfaces runs guest-network-get-interfaces (lo included; the
// Poller drops it).
func (c *Client) NetworkInterfaces(ctx context.Context) ([]NetworkInterface, error) {
	var v []NetworkInterface
	err := c.Execute(ctx, CmdNetworkInterfaces, nil, &v)
	return v, err
}

// Timezone runs guest-get-timezone.
func (c *Client) Timezone(ctx context.Context) (Timezone, error) {
	var v Timezone
	err := c.Execute(ctx, CmdGetTimezone, nil, &v)
	return v, err
}

// Time runs guest-get-time: the guest's clock.
func (c *Client) Time(ctx context.Context) (time.Time, error) {
	var ns int64
	if err := c.Execute(ctx, CmdGetTime, nil, &ns); err != nil {
		return time.Time{}, err
	}
	return timeFromNanos(ns), nil
}

// VCPUs runs guest-get-vcpus.
func (c *Client) VCPUs(ctx context.Context) ([]VCPU, error) {
	var v []VCPU
	err := c.Execute(ctx, CmdGetVCPUs, nil, &v)
	return v, err
}

// Disks runs guest-get-disks.
func (c *Client) Disks(ctx context.Context) ([]Disk, error) {
	var v []Disk
	err := c.Execute(ctx, CmdGetDisks, nil, &v)
	return v, err
}

// FSFreezeStatus runs guest-fsfreeze-status.
func (c *Client) FSFreezeStatus(ctx context.Context) (FreezeStatus, error) {
	var v FreezeStatus
	if err := c.Execute(ctx, CmdFSFreezeStatus, nil, &v); err != nil {
		return "", err
	}
	switch v {
	case FreezeStatusThawed, FreezeStatusFrozen:
		return v, nil
	}
	return "", fmt.Errorf("guestagent: %s: %w: unknown status %q", CmdFSFreezeStatus, ErrProtocol, Sanitize(string(v), 64))
}

// FSFreeze runs guest-fsfreeze-freeze and returns how many filesystems
// were frozen.
func (c *Client) FSFreeze(ctx context.Context) (int, error) {
	var n int
	err := c.Execute(ctx, CmdFSFreezeFreeze, nil, &n)
	return n, err
}

// FSThaw runs guest-fsfreeze-thaw and returns how many filesystems were
// thawed.
func (c *Client) FSThaw(ctx context.Context) (int, error) {
	var n int
	err := c.Execute(ctx, CmdFSFreezeThaw, nil, &n)
	return n, err
}

// Shutdown runs guest-shutdown with mode (powerdown, reboot or halt). The
// agent sends no reply when it accepts the command; over a transport that
// implements OneWayTransport the call returns once the agent has accepted
// or refused it, otherwise an empty reply counts as accepted.
func (c *Client) Shutdown(ctx context.Context, mode ShutdownMode) error {
	switch mode {
	case ShutdownPowerdown, ShutdownReboot, ShutdownHalt:
	default:
		return fmt.Errorf("guestagent: %s: mode %q: %w: want powerdown, reboot or halt", CmdShutdown, mode, ErrInvalidArgument)
	}
	args := map[string]string{"mode": string(mode)}
	req, id, err := c.encode(CmdShutdown, args)
	if err != nil {
		return err
	}
	ctx, cancel := c.withDeadline(ctx)
	defer cancel()
	var raw []byte
	if ow, ok := c.transport.(OneWayTransport); ok {
		raw, err = ow.ExchangeOneWay(ctx, req)
	} else {
		raw, err = c.transport.Exchange(ctx, req)
	}
	if err != nil {
		return fmt.Errorf("guestagent: %s: %w", CmdShutdown, err)
	}
	if len(raw) == 0 {
		return nil
	}
	return decodeReply(raw, CmdShutdown, id, nil, c.opts)
}

// IsTimeout reports whether err is a deadline or cancellation.
func IsTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}
