package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/events"
)

func TestGetEvents(t *testing.T) {
	st := apiMemory(t)
	// The server computes ages at its own time: the events are recorded
	// as if six minutes ago.
	t0 := time.Now().Add(-6 * time.Minute)
	now := t0
	rec, err := events.NewRecorder(events.Options{Store: st, ReportingController: "virtkit.io/virt-handler", Now: func() time.Time { return now }})
	require.NoError(t, err)
	vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vmi1", UID: "u1"}}
	rec.Event(context.Background(), vmi, virtkit.EventTypeNormal, "Started", "Start", "VirtualMachineInstance started")
	now = t0.Add(2 * time.Minute)
	rec.Event(context.Background(), vmi, virtkit.EventTypeWarning, "SyncFailed", "Sync", "disk\x1b[31m missing")
	now = t0.Add(5 * time.Minute)
	rec.Event(context.Background(), vmi, virtkit.EventTypeWarning, "SyncFailed", "Sync", "disk\x1b[31m missing")

	c := storeCLI(t, st)
	out := c.ok("get", "events")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	assert.Regexp(t, `^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$`, lines[0])
	assert.Regexp(t, `^6m\S*\s+Normal\s+Started\s+virtualmachineinstance/vmi1\s+VirtualMachineInstance started$`, lines[1])
	assert.Regexp(t, `^6\ds \(x2 over 4m\S*\)\s+Warning\s+SyncFailed\s+virtualmachineinstance/vmi1\s+disk.*missing$`, lines[2])
	assert.NotContains(t, out, "\x1b", "notes are escaped")

	out = c.ok("get", "events", "-o", "yaml")
	assert.Contains(t, out, "apiVersion: events.k8s.io/v1")
	assert.Contains(t, out, "count: 2")
}
