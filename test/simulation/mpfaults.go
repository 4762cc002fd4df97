package simulation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// The guest faults of the multi-process mode: each node process serves its
// simulated host's fault hooks on a loopback port (`virtkit node
// --sim-faults-addr`, a simulator-only capability), and the faults call
// them on the hosts where the op's guest runs, as the embedded cluster's
// rows call the hosts' methods.

// mpGuestFaults are the multi-process rows of the guest faults.
func mpGuestFaults() map[string]func(context.Context, system, Op) error {
	post := func(fault string, body func(op Op) map[string]any) func(context.Context, system, Op) error {
		return onMPDomain(func(ctx context.Context, m *multiProcess, node, domain string, op Op) error {
			b := map[string]any{}
			if body != nil {
				b = body(op)
			}
			b["domain"] = domain
			return m.simFault(ctx, node, fault, b)
		})
	}
	acpi := func(b sim.ACPIBehaviour) func(ctx context.Context, m *multiProcess, node, domain string, op Op) error {
		return func(ctx context.Context, m *multiProcess, node, domain string, op Op) error {
			body := map[string]any{"domain": domain, "ignore": b.Ignore}
			if b.Delay > 0 {
				body["delay"] = b.Delay.String()
			}
			if err := m.simFault(ctx, node, "acpi", body); err != nil {
				return err
			}
			// Remembered for the stops that follow, as the embedded
			// cluster's setACPI does.
			m.life.mu.Lock()
			defer m.life.mu.Unlock()
			m.life.acpi[node+"/"+domain] = b
			return nil
		}
	}
	return map[string]func(context.Context, system, Op) error{
		"crash-guest":      post("crash-guest", nil),
		"guest-agent-gone": post("guest-agent-gone", nil),
		"cut-migration":    post("cut-migration", nil),
		"acpi-ignore":      onMPDomain(acpi(sim.ACPIBehaviour{Ignore: true})),
		"acpi-delay": func(ctx context.Context, s system, op Op) error {
			return onMPDomain(acpi(sim.ACPIBehaviour{Delay: time.Duration(op.N) * time.Second}))(ctx, s, op)
		},
	}
}

// onMPDomain runs a guest fault on every node whose host runs the op's
// guest (an active domain its agent owns), as onDomain does in the
// embedded cluster. A host inside a frozen or killed node process cannot
// be reached (the embedded cluster's hosts outlive a frozen or crashed
// agent): it is skipped.
func onMPDomain(fault func(ctx context.Context, m *multiProcess, node, domain string, op Op) error) func(context.Context, system, Op) error {
	return onProcesses(func(ctx context.Context, m *multiProcess, op Op) error {
		key, err := guestKey(ctx, m.store, op.Target)
		if err != nil {
			return err
		}
		domain := key.Namespace + "_" + key.Name
		for _, n := range m.names {
			if m.nodes[n].proc.State() != procRunning {
				continue
			}
			doms, err := m.hostDomainsOnceUp(ctx, n)
			if err != nil {
				return err
			}
			for _, d := range doms {
				if d.Name != domain || !d.Active || !d.Owned {
					continue
				}
				cctx, cancel := context.WithTimeout(ctx, mpCallTimeout)
				err := fault(cctx, m, n, domain, op)
				cancel()
				if err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// mpStartLimit bounds how long a node process that was just started may
// take to serve its host.
const mpStartLimit = 20 * time.Second

// hostDomainsOnceUp reads a node's host, waiting while a process that was
// just started does not listen yet; nothing when it went down meanwhile, or
// when it does not listen while partitioned from the store (a node process
// started then waits for the store before it opens its host).
func (m *multiProcess) hostDomainsOnceUp(ctx context.Context, name string) ([]node.HostDomain, error) {
	deadline := time.Now().Add(mpStartLimit)
	for {
		cctx, cancel := context.WithTimeout(ctx, mpCallTimeout)
		doms, err := m.hostDomains(cctx, name)
		cancel()
		n := m.nodes[name]
		if n.proc.State() != procRunning || (errors.Is(err, syscall.ECONNREFUSED) && n.proxy != nil && n.proxy.IsCut()) {
			return nil, nil
		}
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(deadline) {
			return doms, err
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// mpFaultBodyLimit bounds the reply of a node's fault endpoint read.
const mpFaultBodyLimit = 64 << 10

// simFault posts one fault to a node's fault endpoint. The domain may have
// stopped or left between the read of the host and the fault: the
// endpoint's 404 and 409 are then a user's request that no longer fits
// (wrapped store.ErrNotFound and store.ErrConflict), not a failure.
func (m *multiProcess) simFault(ctx context.Context, node, fault string, body map[string]any) error {
	n := m.nodes[node]
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	url := "http://" + n.faultsAddr + "/sim/faults/" + fault
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := m.client.Do(req)
	if err != nil {
		return fmt.Errorf("node %s: %s: %w", node, fault, err)
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, mpFaultBodyLimit))
	msg := strings.TrimSpace(string(reply))
	switch resp.StatusCode {
	case http.StatusOK:
		m.mu.Lock()
		m.guestFaults++
		m.mu.Unlock()
		return nil
	case http.StatusNotFound:
		return fmt.Errorf("node %s: %s: %w", node, msg, store.ErrNotFound)
	case http.StatusConflict:
		return fmt.Errorf("node %s: %s: %w", node, msg, store.ErrConflict)
	}
	return fmt.Errorf("node %s: POST %s: %s: %s", node, url, resp.Status, msg)
}

// forgetHostFaults drops what the simulation remembers of a node's host's
// guest faults once its process is gone: the ACPI behaviours live in the
// process's memory (its --sim-state file keeps definitions and run
// states only), so the next process's guests answer ACPI by default.
func (m *multiProcess) forgetHostFaults(node string) {
	m.life.mu.Lock()
	defer m.life.mu.Unlock()
	for k := range m.life.acpi {
		if strings.HasPrefix(k, node+"/") {
			delete(m.life.acpi, k)
		}
	}
}
