package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
)

// The simulated host's fault endpoint (--sim-faults-addr): a test
// capability of the simulator that libvirt has no counterpart for. It lets
// a test that runs `virtkit node --hypervisor sim` as a separate process
// inject the guest faults the simulated host models (a crashing guest, a
// guest agent that goes away, a cut migration stream, a guest that ignores
// ACPI or takes its time to power off) into the guests of that node.
const (
	// simFaultsPrefix is where the faults are served: POST PREFIX+FAULT.
	simFaultsPrefix = "/sim/faults/"
	// simFaultsMaxBody bounds a request body: a domain name and a delay.
	simFaultsMaxBody = 4 << 10
	// simFaultsCallTimeout bounds one fault's reads and call of the host.
	simFaultsCallTimeout = 10 * time.Second
	// simFaultsMaxDelay bounds an ACPI delay.
	simFaultsMaxDelay = time.Hour
)

// simFaultsFlagHelp is --sim-faults-addr's help.
const simFaultsFlagHelp = "SIMULATOR ONLY (--hypervisor sim; libvirt has no counterpart): serve the simulated host's guest-fault hooks " +
	"(POST " + simFaultsPrefix + "crash-guest, guest-agent-gone, cut-migration, acpi with a JSON body naming the domain) " +
	"on this loopback address, e.g. 127.0.0.1:0, for tests; no authentication, so loopback addresses only"

func registerSimFaultsFlag(cmd *cobra.Command, addr *string) {
	cmd.Flags().StringVar(addr, "sim-faults-addr", "", simFaultsFlagHelp)
}

// errSimFaultsFlag wraps every refusal of --sim-faults-addr.
var errSimFaultsFlag = errors.New("--sim-faults-addr")

// checkSimFaultsAddr refuses --sim-faults-addr with another hypervisor
// than the simulator, or on an address that is not loopback.
func checkSimFaultsAddr(addr, hv string) error {
	if addr == "" {
		return nil
	}
	if hv != "sim" {
		return fmt.Errorf("%w: only with --hypervisor sim: the guest-fault hooks are the simulator's, %s has none (got --hypervisor %s)",
			errSimFaultsFlag, hv, hv)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: %q: want a loopback HOST:PORT such as 127.0.0.1:0: %w", errSimFaultsFlag, addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return fmt.Errorf("%w: %q: not a loopback address (the endpoint has no authentication): use 127.0.0.1 or ::1", errSimFaultsFlag, addr)
	}
	return nil
}

// simFaultHost is the simulated host's fault hooks (*sim.Host).
type simFaultHost interface {
	Name() string
	CrashGuest(ctx context.Context, name string) error
	DisconnectGuestAgent(ctx context.Context, name string) error
	CutMigration(ctx context.Context, name string) (bool, error)
	SetACPIBehaviour(name string, b sim.ACPIBehaviour)
}

// hostDomainReader tells which of the host's domains are this node's (the
// node agent's ownership, read from the host alone).
type hostDomainReader interface {
	HostDomains(ctx context.Context) ([]node.HostDomain, error)
}

// simHostOf is the simulated host behind the node's hypervisor, nil for
// another hypervisor.
func simHostOf(hv hypervisor.Hypervisor) *sim.Host {
	switch h := hv.(type) {
	case *sim.Host:
		return h
	case *sim.Persistent:
		return h.Unwrap()
	}
	return nil
}

// simFaultRequest is the body of every fault: the domain, and for acpi how
// its guest answers from now on (neither: the host's default).
type simFaultRequest struct {
	Domain string `json:"domain"`
	// Ignore (acpi): the guest drops every power-button request.
	Ignore bool `json:"ignore,omitempty"`
	// Delay (acpi): how long the guest runs on after accepting a request
	// (a Go duration, at most 1h).
	Delay string `json:"delay,omitempty"`
}

// simFaultReply is the answer to a fault the host took.
type simFaultReply struct {
	Node   string `json:"node"`
	Fault  string `json:"fault"`
	Domain string `json:"domain"`
	// Cut (cut-migration): whether a migration of the domain was running.
	Cut *bool `json:"cut,omitempty"`
}

// simFaultError is a refused request with its status.
type simFaultError struct {
	status int
	msg    string
}

func (e *simFaultError) Error() string { return e.msg }

func refuse(status int, format string, args ...any) error {
	return &simFaultError{status: status, msg: fmt.Sprintf(format, args...)}
}

// simFaults are the faults served, by name.
var simFaults = map[string]func(ctx context.Context, h simFaultHost, req simFaultRequest, rep *simFaultReply) error{
	"crash-guest": func(ctx context.Context, h simFaultHost, req simFaultRequest, _ *simFaultReply) error {
		return h.CrashGuest(ctx, req.Domain)
	},
	"guest-agent-gone": func(ctx context.Context, h simFaultHost, req simFaultRequest, _ *simFaultReply) error {
		return h.DisconnectGuestAgent(ctx, req.Domain)
	},
	"cut-migration": func(ctx context.Context, h simFaultHost, req simFaultRequest, rep *simFaultReply) error {
		cut, err := h.CutMigration(ctx, req.Domain)
		rep.Cut = &cut
		return err
	},
	"acpi": func(ctx context.Context, h simFaultHost, req simFaultRequest, _ *simFaultReply) error {
		b, err := acpiBehaviour(req)
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		h.SetACPIBehaviour(req.Domain, b)
		return nil
	},
}

func acpiBehaviour(req simFaultRequest) (sim.ACPIBehaviour, error) {
	if req.Delay == "" {
		return sim.ACPIBehaviour{Ignore: req.Ignore}, nil
	}
	if req.Ignore {
		return sim.ACPIBehaviour{}, refuse(http.StatusBadRequest, "delay, ignore: give one: a guest that ignores ACPI has no delay")
	}
	d, err := time.ParseDuration(req.Delay)
	if err != nil || d <= 0 || d > simFaultsMaxDelay {
		return sim.ACPIBehaviour{}, refuse(http.StatusBadRequest, "delay: %q: want a positive duration of at most %s, e.g. 20s", req.Delay, simFaultsMaxDelay)
	}
	return sim.ACPIBehaviour{Delay: d}, nil
}

// simFaultsHandler serves POST PREFIX+FAULT with a simFaultRequest. It
// acts only on a domain of this host that the node agent owns.
func simFaultsHandler(h simFaultHost, doms hostDomainReader, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, simFaultsPrefix)
		rep, err := serveSimFault(w, r, name, h, doms)
		if err != nil {
			status := http.StatusInternalServerError
			var se *simFaultError
			switch {
			case errors.As(err, &se):
				status = se.status
			case errors.Is(err, hypervisor.ErrNotFound):
				status = http.StatusNotFound // gone since the ownership check
			case errors.Is(err, hypervisor.ErrInvalidState):
				status = http.StatusConflict
			case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
				status = http.StatusServiceUnavailable
			}
			if status == http.StatusMethodNotAllowed {
				w.Header().Set("Allow", http.MethodPost)
			}
			http.Error(w, fmt.Sprintf("%s%s: %v", simFaultsPrefix, name, err), status)
			return
		}
		log.Info("simulated guest fault injected", "fault", name, "domain", rep.Domain)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rep)
	})
}

func serveSimFault(w http.ResponseWriter, r *http.Request, name string, h simFaultHost, doms hostDomainReader) (simFaultReply, error) {
	fault, ok := simFaults[name]
	if !ok {
		return simFaultReply{}, refuse(http.StatusNotFound, "unknown fault: want one of %s", strings.Join(simFaultNames(), ", "))
	}
	if r.Method != http.MethodPost {
		return simFaultReply{}, refuse(http.StatusMethodNotAllowed, "method %s: want POST", r.Method)
	}
	req, err := decodeSimFault(w, r)
	if err != nil {
		return simFaultReply{}, err
	}
	if name != "acpi" && (req.Ignore || req.Delay != "") {
		return simFaultReply{}, refuse(http.StatusBadRequest, "ignore, delay: only for acpi")
	}
	if _, err := acpiBehaviour(req); err != nil {
		return simFaultReply{}, err
	}
	ctx, cancel := context.WithTimeout(r.Context(), simFaultsCallTimeout)
	defer cancel()
	if err := checkOwned(ctx, doms, h.Name(), req.Domain); err != nil {
		return simFaultReply{}, err
	}
	rep := simFaultReply{Node: h.Name(), Fault: name, Domain: req.Domain}
	return rep, fault(ctx, h, req, &rep)
}

func decodeSimFault(w http.ResponseWriter, r *http.Request) (simFaultRequest, error) {
	var req simFaultRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, simFaultsMaxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		if tooBig := (*http.MaxBytesError)(nil); errors.As(err, &tooBig) {
			return req, refuse(http.StatusRequestEntityTooLarge, "request body: larger than %d bytes", simFaultsMaxBody)
		}
		return req, refuse(http.StatusBadRequest, "request body: want JSON {\"domain\": NAME}: %v", err)
	}
	if dec.More() {
		return req, refuse(http.StatusBadRequest, "request body: one JSON object, got more")
	}
	if req.Domain == "" {
		return req, refuse(http.StatusBadRequest, "domain: required")
	}
	return req, nil
}

// checkOwned refuses a domain that is not on this host or that the node
// agent does not own (another node's, or no virtkit guest at all).
func checkOwned(ctx context.Context, doms hostDomainReader, nodeName, domName string) error {
	list, err := doms.HostDomains(ctx)
	if err != nil {
		return fmt.Errorf("reading the host: %w", err)
	}
	for _, d := range list {
		if d.Name != domName {
			continue
		}
		if d.Owned {
			return nil
		}
		why := "no virtkit metadata"
		switch {
		case d.Virtkit && d.Node == "":
			why = "virtkit metadata names no node"
		case d.Virtkit:
			why = "belongs to node " + d.Node
		}
		return refuse(http.StatusForbidden, "domain %q: not node %s's (%s): faults act only on this node's guests", domName, nodeName, why)
	}
	return refuse(http.StatusNotFound, "domain %q: not on host %s", domName, nodeName)
}

func simFaultNames() []string {
	names := make([]string, 0, len(simFaults))
	for n := range simFaults {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// serveSimFaults serves the fault endpoint on addr (checked by
// checkSimFaultsAddr) until stop is called or ctx ends, and prints its URL
// to out.
func serveSimFaults(ctx context.Context, addr string, h simFaultHost, doms hostDomainReader, log *slog.Logger, out io.Writer) (stop func(), err error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errSimFaultsFlag, err)
	}
	if a, ok := ln.Addr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
		_ = ln.Close()
		return nil, fmt.Errorf("%w: %q listens on %s, not a loopback address", errSimFaultsFlag, addr, ln.Addr())
	}
	mux := http.NewServeMux()
	mux.Handle(simFaultsPrefix, simFaultsHandler(h, doms, log))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: simFaultsCallTimeout + 5*time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 16 << 10,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("simulated host fault endpoint", "err", err)
		}
	}()
	fmt.Fprintf(out, "sim faults: http://%s%s\n", ln.Addr(), simFaultsPrefix)
	log.Warn("serving the simulated host's guest-fault hooks (a simulator-only test capability, no authentication)",
		"addr", ln.Addr().String())
	stop = shutdownOnce(ctx, srv, served)
	return stop, nil
}
