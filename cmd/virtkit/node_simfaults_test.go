package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// faultDomainXML is a domain with the guest-agent channel, and virtkit's
// metadata naming owner unless owner is "".
func faultDomainXML(name, owner string) string {
	meta := ""
	if owner != "" {
		meta = fmt.Sprintf(`<metadata><kubevirt xmlns="http://kubevirt.io"><uid>uid-%s</uid><node>%s</node></kubevirt></metadata>`, name, owner)
	}
	return fmt.Sprintf(`<domain type='kvm'><name>%s</name>%s<memory unit='MiB'>64</memory><vcpu>1</vcpu>`+
		`<os><type arch='x86_64'>hvm</type></os><devices><channel type='unix'><target type='virtio' name='org.qemu.guest_agent.0'/></channel></devices></domain>`,
		name, meta)
}

// simFaultsFixture is node n1's simulated host on a virtual clock with
// its guest default_mine, node n2's default_theirs, someone else's
// legacy_db (all running) and n1's default_off (defined, shut off), and
// the fault endpoint in front of it with n1's agent deciding ownership.
func simFaultsFixture(t *testing.T) (*sim.Host, *sim.VirtualClock, *httptest.Server) {
	t.Helper()
	clock := sim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := sim.New(sim.Options{Name: "n1", Clock: clock})
	ctx := t.Context()
	for name, owner := range map[string]string{"default_mine": "n1", "default_theirs": "n2", "legacy_db": "", "default_off": "n1"} {
		_, err := h.Define(ctx, faultDomainXML(name, owner))
		require.NoError(t, err)
		if name != "default_off" {
			require.NoError(t, h.Start(ctx, name, hypervisor.StartOptions{}))
		}
	}
	clock.Advance(time.Second) // the guest agents connect
	agent, err := node.New(node.Options{NodeName: "n1", Store: store.NewMemory(), Hypervisor: h})
	require.NoError(t, err)
	srv := httptest.NewServer(simFaultsHandler(h, agent, slog.New(slog.DiscardHandler)))
	t.Cleanup(srv.Close)
	return h, clock, srv
}

func postFault(t *testing.T, srv *httptest.Server, method, fault, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+simFaultsPrefix+fault, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(data)
}

// Bad requests and domains that are not this node's are refused with a
// status and a message naming what is wrong, and nothing happens to the
// guests.
func TestSimFaultsRefused(t *testing.T) {
	h, clock, srv := simFaultsFixture(t)
	for _, tc := range []struct {
		name, method, fault, body string
		status                    int
		msg                       string
	}{
		{"unknown fault", http.MethodPost, "melt-cpu", `{"domain":"default_mine"}`, http.StatusNotFound,
			"unknown fault: want one of acpi, crash-guest, cut-migration, guest-agent-gone"},
		{"GET", http.MethodGet, "crash-guest", ``, http.StatusMethodNotAllowed, "method GET: want POST"},
		{"not JSON", http.MethodPost, "crash-guest", `domain=default_mine`, http.StatusBadRequest, "request body: want JSON"},
		{"empty body", http.MethodPost, "crash-guest", ``, http.StatusBadRequest, "request body: want JSON"},
		{"unknown field", http.MethodPost, "crash-guest", `{"domain":"default_mine","force":true}`, http.StatusBadRequest, `unknown field "force"`},
		{"two objects", http.MethodPost, "crash-guest", `{"domain":"default_mine"}{}`, http.StatusBadRequest, "one JSON object, got more"},
		{"no domain", http.MethodPost, "crash-guest", `{}`, http.StatusBadRequest, "domain: required"},
		{"too large", http.MethodPost, "crash-guest", `{"domain":"` + strings.Repeat("x", 2*simFaultsMaxBody) + `"}`,
			http.StatusRequestEntityTooLarge, "larger than 4096 bytes"},
		{"acpi field on another fault", http.MethodPost, "crash-guest", `{"domain":"default_mine","ignore":true}`, http.StatusBadRequest,
			"ignore, delay: only for acpi"},
		{"ignore and delay", http.MethodPost, "acpi", `{"domain":"default_mine","ignore":true,"delay":"3s"}`, http.StatusBadRequest,
			"delay, ignore: give one"},
		{"bad delay", http.MethodPost, "acpi", `{"domain":"default_mine","delay":"soon"}`, http.StatusBadRequest, `delay: "soon": want a positive duration`},
		{"negative delay", http.MethodPost, "acpi", `{"domain":"default_mine","delay":"-1s"}`, http.StatusBadRequest, `delay: "-1s"`},
		{"delay too long", http.MethodPost, "acpi", `{"domain":"default_mine","delay":"2h"}`, http.StatusBadRequest, "at most 1h0m0s"},
		{"not on the host", http.MethodPost, "crash-guest", `{"domain":"default_ghost"}`, http.StatusNotFound, `domain "default_ghost": not on host n1`},
		{"another node's guest", http.MethodPost, "crash-guest", `{"domain":"default_theirs"}`, http.StatusForbidden,
			`domain "default_theirs": not node n1's (belongs to node n2)`},
		{"another node's guest, acpi", http.MethodPost, "acpi", `{"domain":"default_theirs","ignore":true}`, http.StatusForbidden,
			"belongs to node n2"},
		{"not a virtkit guest", http.MethodPost, "guest-agent-gone", `{"domain":"legacy_db"}`, http.StatusForbidden,
			`domain "legacy_db": not node n1's (no virtkit metadata)`},
		{"not running", http.MethodPost, "crash-guest", `{"domain":"default_off"}`, http.StatusConflict, "domain is not running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := postFault(t, srv, tc.method, tc.fault, tc.body)
			assert.Equal(t, tc.status, status, body)
			assert.Contains(t, body, tc.msg)
			assert.True(t, strings.HasPrefix(body, simFaultsPrefix+tc.fault+": "), "the message names the fault: %q", body)
		})
	}
	for _, name := range []string{"default_mine", "default_theirs", "legacy_db"} {
		info, err := h.Info(t.Context(), name)
		require.NoError(t, err)
		assert.Equal(t, hypervisor.StateRunning, info.State, "%s untouched", name)
		_, err = h.AgentCommand(t.Context(), name, `{"execute":"guest-ping"}`)
		assert.NoError(t, err, "%s's guest agent untouched", name)
	}
	// The foreign guest still answers ACPI at once: the refused acpi
	// request did not reach the host.
	require.NoError(t, h.RequestShutdown(t.Context(), "default_theirs"))
	clock.Advance(time.Second)
	info, err := h.Info(t.Context(), "default_theirs")
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateShutoff, info.State)
	assert.Equal(t, hypervisor.ReasonShutdown, info.Reason)
}

// Each fault reaches the simulated host and does what the host's hook
// does.
func TestSimFaultsInjected(t *testing.T) {
	h, clock, srv := simFaultsFixture(t)
	ctx := t.Context()
	state := func(name string) hypervisor.DomainInfo {
		info, err := h.Info(ctx, name)
		require.NoError(t, err)
		return info
	}

	// acpi: ignore, then the default again.
	status, body := postFault(t, srv, http.MethodPost, "acpi", `{"domain":"default_mine","ignore":true}`)
	require.Equal(t, http.StatusOK, status, body)
	var rep simFaultReply
	require.NoError(t, json.Unmarshal([]byte(body), &rep))
	assert.Equal(t, simFaultReply{Node: "n1", Fault: "acpi", Domain: "default_mine"}, rep)
	require.NoError(t, h.RequestShutdown(ctx, "default_mine"))
	clock.Advance(time.Hour)
	assert.Equal(t, hypervisor.StateRunning, state("default_mine").State, "the guest ignores ACPI")
	status, body = postFault(t, srv, http.MethodPost, "acpi", `{"domain":"default_mine","delay":"30s"}`)
	require.Equal(t, http.StatusOK, status, body)
	require.NoError(t, h.RequestShutdown(ctx, "default_mine"))
	clock.Advance(29 * time.Second)
	assert.Equal(t, hypervisor.StateRunning, state("default_mine").State, "powering off takes 30s")
	clock.Advance(2 * time.Second)
	assert.Equal(t, hypervisor.StateShutoff, state("default_mine").State, "powered off after 30s")
	assert.Equal(t, hypervisor.ReasonShutdown, state("default_mine").Reason)
	require.NoError(t, h.Start(ctx, "default_mine", hypervisor.StartOptions{}))
	clock.Advance(time.Second)

	// guest-agent-gone.
	status, body = postFault(t, srv, http.MethodPost, "guest-agent-gone", `{"domain":"default_mine"}`)
	require.Equal(t, http.StatusOK, status, body)
	_, err := h.AgentCommand(ctx, "default_mine", `{"execute":"guest-ping"}`)
	require.ErrorIs(t, err, hypervisor.ErrAgentUnavailable)

	// cut-migration with no migration running: nothing cut.
	status, body = postFault(t, srv, http.MethodPost, "cut-migration", `{"domain":"default_mine"}`)
	require.Equal(t, http.StatusOK, status, body)
	rep = simFaultReply{}
	require.NoError(t, json.Unmarshal([]byte(body), &rep))
	require.NotNil(t, rep.Cut)
	assert.False(t, *rep.Cut)
	assert.Equal(t, hypervisor.StateRunning, state("default_mine").State)

	// crash-guest.
	status, body = postFault(t, srv, http.MethodPost, "crash-guest", `{"domain":"default_mine"}`)
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, hypervisor.StateShutoff, state("default_mine").State)
	assert.Equal(t, hypervisor.ReasonCrashed, state("default_mine").Reason)
	// A second crash finds no running guest.
	status, body = postFault(t, srv, http.MethodPost, "crash-guest", `{"domain":"default_mine"}`)
	assert.Equal(t, http.StatusConflict, status, body)
}

// The flag: the simulator only, loopback only.
func TestSimFaultsAddrFlag(t *testing.T) {
	for _, tc := range []struct {
		addr, hv, err string
	}{
		{"127.0.0.1:0", "sim", ""},
		{"[::1]:7000", "sim", ""},
		{"localhost:7000", "sim", ""},
		{"", "libvirt", ""},
		{"127.0.0.1:0", "libvirt", "--sim-faults-addr: only with --hypervisor sim"},
		{"0.0.0.0:7000", "sim", `"0.0.0.0:7000": not a loopback address`},
		{"10.1.2.3:7000", "sim", "not a loopback address"},
		{"example.com:7000", "sim", "not a loopback address"},
		{":7000", "sim", "not a loopback address"},
		{"127.0.0.1", "sim", "want a loopback HOST:PORT"},
	} {
		t.Run(tc.addr+" "+tc.hv, func(t *testing.T) {
			err := checkSimFaultsAddr(tc.addr, tc.hv)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, errSimFaultsFlag)
			assert.ErrorContains(t, err, tc.err)
		})
	}
	// `virtkit node` refuses it with libvirt before it connects anywhere.
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"node", "--name", "n1", "--store", "etcd://127.0.0.1:1", "--hypervisor", "libvirt",
		"--sim-faults-addr", "127.0.0.1:0"})
	err := cmd.ExecuteContext(t.Context())
	require.ErrorIs(t, err, errSimFaultsFlag)
	assert.ErrorContains(t, err, "only with --hypervisor sim")
}

// The served endpoint: a loopback listener with its URL printed, and the
// same handler behind it.
func TestSimFaultsServe(t *testing.T) {
	h := sim.New(sim.Options{Name: "n1"})
	_, err := h.Define(t.Context(), faultDomainXML("default_mine", "n1"))
	require.NoError(t, err)
	require.NoError(t, h.Start(t.Context(), "default_mine", hypervisor.StartOptions{}))
	agent, err := node.New(node.Options{NodeName: "n1", Store: store.NewMemory(), Hypervisor: h})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out bytes.Buffer
	stop, err := serveSimFaults(ctx, "127.0.0.1:0", h, agent, slog.New(slog.DiscardHandler), &out)
	require.NoError(t, err)
	defer stop()
	m := regexp.MustCompile(`sim faults: (http://127\.0\.0\.1:\d+/sim/faults/)`).FindStringSubmatch(out.String())
	require.NotNil(t, m, out.String())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m[1]+"crash-guest", strings.NewReader(`{"domain":"default_mine"}`))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	info, err := h.Info(t.Context(), "default_mine")
	require.NoError(t, err)
	assert.Equal(t, hypervisor.ReasonCrashed, info.Reason)
}
