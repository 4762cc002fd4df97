package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube/kubetest"
	"github.com/virtkit/virtkit/events"
)

func TestGetEvents(t *testing.T) {
	st := kubetest.NewMemory(t)
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakeClock(t0)
	rec, err := events.NewRecorder(events.Options{Store: st, ReportingController: "virtkit.io/virt-handler", Clock: clk})
	require.NoError(t, err)
	vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vmi1", UID: "u1"}}
	rec.Event(context.Background(), vmi, virtkit.EventTypeNormal, "Started", "Start", "VirtualMachineInstance started")
	clk.SetTime(t0.Add(2 * time.Minute))
	rec.Event(context.Background(), vmi, virtkit.EventTypeWarning, "SyncFailed", "Sync", "disk\x1b[31m missing")
	clk.SetTime(t0.Add(5 * time.Minute))
	rec.Event(context.Background(), vmi, virtkit.EventTypeWarning, "SyncFailed", "Sync", "disk\x1b[31m missing")

	api := serveAt(t, st, t0.Add(6*time.Minute))
	var out bytes.Buffer
	require.NoError(t, runGet(t, api, &out, "events", "", namespaceFlags{namespace: "default"}, "table"))
	lines := bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n"))
	require.Len(t, lines, 3, out.String())
	assert.Regexp(t, `^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$`, string(lines[0]))
	// The server's order (by name), as kubectl prints it.
	assert.Regexp(t, `(?m)^6m\s+Normal\s+Started\s+virtualmachineinstance/vmi1\s+VirtualMachineInstance started$`, out.String())
	assert.Regexp(t, `(?m)^60s \(x2 over 4m\)\s+Warning\s+SyncFailed\s+virtualmachineinstance/vmi1\s+disk.*missing$`, out.String())
	assert.NotContains(t, out.String(), "\x1b", "notes are escaped")

	out.Reset()
	require.NoError(t, runGet(t, api, &out, "events", "", namespaceFlags{namespace: "default"}, "yaml"))
	assert.Contains(t, out.String(), "kind: Event")
	assert.Contains(t, out.String(), "count: 2")
}
