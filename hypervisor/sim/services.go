package sim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/virtkit/virtkit/hypervisor"
)

// ServicesAnnotation declares the services a simulated guest runs, as
// KIND:PORT pairs separated by commas, KIND one of ssh, http or echo:
// "ssh:22,http:8080,echo:7". It is read by the simulator only; a real
// guest runs whatever its image runs.
const ServicesAnnotation = "sim.virtkit.io/services"

// Guest service kinds.
const (
	ServiceSSH  = "ssh"
	ServiceHTTP = "http"
	ServiceEcho = "echo"
)

// guestServices holds what the node told each domain name's guest
// (ConfigureGuest): the services it runs and the keys its SSH server takes.
type guestServices struct {
	mu  sync.Mutex
	cfg map[string]guestServiceConfig
}

// guestServiceConfig is one guest's services.
type guestServiceConfig struct {
	ports map[int]string // port -> kind
	// keys are the authorized keys by login name; "" holds the keys
	// any login name may use (cloud-init's top-level ssh_authorized_keys).
	keys map[string][]string
}

// userData is the part of cloud-config the simulated guest reads.
type userData struct {
	SSHAuthorizedKeys []string    `yaml:"ssh_authorized_keys"`
	Users             []yaml.Node `yaml:"users"`
}

// parseGuestServices reads the services annotation and the cloud-config:
// ssh on port 22 is added when the cloud-config gives keys and the
// annotation declares no ssh service.
func parseGuestServices(cfg hypervisor.GuestConfig) (guestServiceConfig, error) {
	out := guestServiceConfig{ports: map[int]string{}, keys: map[string][]string{}}
	field := "metadata.annotations[" + ServicesAnnotation + "]"
	hasSSH := false
	if decl := strings.TrimSpace(cfg.Annotations[ServicesAnnotation]); decl != "" {
		for _, item := range strings.Split(decl, ",") {
			kind, port, ok := strings.Cut(strings.TrimSpace(item), ":")
			n, err := strconv.Atoi(port)
			if !ok || err != nil || n < 1 || n > 65535 {
				return out, fmt.Errorf("%s: %q: %w: want KIND:PORT with PORT 1-65535", field, item, hypervisor.ErrInvalidArgument)
			}
			switch kind {
			case ServiceSSH, ServiceHTTP, ServiceEcho:
			default:
				return out, fmt.Errorf("%s: %q: %w: kind %q (want ssh, http or echo)", field, item, hypervisor.ErrInvalidArgument, kind)
			}
			if prev, dup := out.ports[n]; dup {
				return out, fmt.Errorf("%s: port %d declared twice (%s and %s): %w", field, n, prev, kind, hypervisor.ErrInvalidArgument)
			}
			out.ports[n] = kind
			hasSSH = hasSSH || kind == ServiceSSH
		}
	}
	if strings.TrimSpace(cfg.UserData) != "" && strings.HasPrefix(strings.TrimSpace(cfg.UserData), "#cloud-config") {
		var ud userData
		if err := yaml.Unmarshal([]byte(cfg.UserData), &ud); err != nil {
			return out, fmt.Errorf("cloud-init userData: %w: %w", hypervisor.ErrInvalidArgument, err)
		}
		out.keys[""] = ud.SSHAuthorizedKeys
		for _, u := range ud.Users {
			var named struct {
				Name string   `yaml:"name"`
				Keys []string `yaml:"ssh_authorized_keys"`
			}
			if u.Kind == yaml.MappingNode && u.Decode(&named) == nil && named.Name != "" {
				out.keys[named.Name] = append(out.keys[named.Name], named.Keys...)
			}
		}
	}
	if !hasSSH && out.hasKeys() {
		if _, taken := out.ports[22]; !taken {
			out.ports[22] = ServiceSSH
		}
	}
	return out, nil
}

func (c guestServiceConfig) hasKeys() bool {
	for _, ks := range c.keys {
		if len(ks) > 0 {
			return true
		}
	}
	return false
}

// ConfigureGuest tells the simulated guest of domain name which services it
// runs: those ServicesAnnotation declares, plus an SSH server on port 22
// when the cloud-init user-data (a #cloud-config) gives ssh_authorized_keys
// at the top level or for a user. The configuration is kept by domain
// name, so it holds across restarts; the node agent sends it before every
// DialGuest.
func (h *Host) ConfigureGuest(ctx context.Context, name string, cfg hypervisor.GuestConfig) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sc, err := parseGuestServices(cfg)
	if err != nil {
		return hypervisor.WrapDomain("ConfigureGuest", name, err)
	}
	h.services.mu.Lock()
	defer h.services.mu.Unlock()
	if h.services.cfg == nil {
		h.services.cfg = map[string]guestServiceConfig{}
	}
	h.services.cfg[name] = sc
	return nil
}

// DialGuest connects to a service of the running simulated guest of domain
// name: address is HOST:PORT, the host part (the address the node
// assigned) informative, the port one of the declared services (see
// ConfigureGuest). The connection is an in-memory pipe to the service. A
// guest that is not running (paused, migrating in, stopped) refuses; open
// connections break when the domain stops running on this host (paused,
// migrated away, stopped), as a migration's downtime breaks them on a real
// network, and a new dial reaches the guest on its new host. Only tcp is
// modelled.
func (h *Host) DialGuest(ctx context.Context, name, network, address string) (io.ReadWriteCloser, error) {
	const op = "DialGuest"
	if network != "tcp" {
		return nil, hypervisor.WrapDomain(op, name, fmt.Errorf("%w: simulated guest services speak tcp, not %s", hypervisor.ErrNotSupported, network))
	}
	_, portStr, err := net.SplitHostPort(address)
	port, perr := strconv.Atoi(portStr)
	if err != nil || perr != nil {
		return nil, hypervisor.WrapDomain(op, name, fmt.Errorf("address %q: %w: want HOST:PORT", address, hypervisor.ErrInvalidArgument))
	}
	var info hypervisor.DomainInfo
	err = h.do(ctx, func(time.Time) error {
		d, err := h.lookup(op, name)
		if err != nil {
			return err
		}
		if d.state != hypervisor.StateRunning {
			return invalidState(op, name, fmt.Sprintf("the guest is %s: connection refused", d.state))
		}
		info = h.info(d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	h.services.mu.Lock()
	sc := h.services.cfg[name]
	h.services.mu.Unlock()
	kind, ok := sc.ports[port]
	if !ok {
		return nil, hypervisor.WrapDomain(op, name, fmt.Errorf("%w: dial tcp %s: connection refused (no simulated service on port %d; declare one with the %s annotation)",
			errConnectionRefused, address, port, ServicesAnnotation))
	}
	guest, user := net.Pipe()
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	events, err := h.Events(cctx)
	if err != nil {
		cancel()
		return nil, hypervisor.WrapDomain(op, name, err)
	}
	go func() {
		// The connection breaks when the guest stops running here.
		defer cancel()
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					return
				}
				if ev.Domain == name && ev.Kind == hypervisor.EventLifecycle && ev.State != hypervisor.StateRunning {
					_ = guest.Close()
					return
				}
			case <-cctx.Done():
				return
			}
		}
	}()
	go func() {
		defer cancel()
		defer guest.Close()
		switch kind {
		case ServiceSSH:
			serveSSH(cctx, guest, info, sc.keys)
		case ServiceHTTP:
			serveHTTP(guest, info, port)
		default:
			_, _ = io.Copy(guest, guest)
		}
	}()
	return user, nil
}

// errConnectionRefused is a dial to a port no simulated service listens on.
var errConnectionRefused = errors.New("connection refused")

// serveHTTP answers HTTP/1.1 requests on one connection: every GET or HEAD
// gets 200 with a plain-text line naming the guest, the request and the
// port; other methods get 405.
func serveHTTP(rw io.ReadWriter, info hypervisor.DomainInfo, port int) {
	r := bufio.NewReader(rw)
	for {
		req, err := http.ReadRequest(r)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
		body := fmt.Sprintf("virtkit simulated guest %s: %s %s (http service on port %d)\n", guestHostname(info.Name), req.Method, req.URL.RequestURI(), port)
		resp := &http.Response{StatusCode: http.StatusOK, ProtoMajor: 1, ProtoMinor: 1, Request: req,
			Header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}}, Close: req.Close}
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			resp.StatusCode = http.StatusMethodNotAllowed
			body = fmt.Sprintf("method %s: the simulated http service answers GET and HEAD\n", req.Method)
		}
		resp.Status = fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
		resp.ContentLength = int64(len(body))
		resp.Body = io.NopCloser(strings.NewReader(body))
		if err := resp.Write(rw); err != nil || req.Close {
			return
		}
	}
}

// ConfigureGuest is Host.ConfigureGuest.
func (p *Persistent) ConfigureGuest(ctx context.Context, name string, cfg hypervisor.GuestConfig) error {
	return p.host.ConfigureGuest(ctx, name, cfg)
}

// DialGuest is Host.DialGuest.
func (p *Persistent) DialGuest(ctx context.Context, name, network, address string) (io.ReadWriteCloser, error) {
	return p.host.DialGuest(ctx, name, network, address)
}

var (
	_ hypervisor.GuestDialer     = (*Host)(nil)
	_ hypervisor.GuestConfigurer = (*Host)(nil)
	_ hypervisor.GuestDialer     = (*Persistent)(nil)
	_ hypervisor.GuestConfigurer = (*Persistent)(nil)
)
