package qgaserver

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/guestagent"
)

// TestReturnLineMatchesEncodingJSON checks that the reply built from a
// cached encoded value is byte for byte what encoding/json makes of the
// whole reply object.
func TestReturnLineMatchesEncodingJSON(t *testing.T) {
	tests := []struct {
		name string
		id   string
		v    any
	}{
		{"no id", "", guestagent.HostNameReply{HostName: "vm-1"}},
		{"string id", `"virtkit-7"`, guestagent.OSInfo{ID: "debian", PrettyName: "Debian GNU/Linux 12"}},
		{"number id", `42`, int64(1700000000000000000)},
		{"id with spaces", `{ "a" : [1, 2] }`, []guestagent.User{{User: "root", LoginTime: 1.5}}},
		{"html and unicode", `"<&>\u2028é"`, guestagent.HostNameReply{HostName: "<b>hôte</b>\u2028"}},
		{"null id", `null`, struct{}{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.Marshal(struct {
				Return any             `json:"return"`
				ID     json.RawMessage `json:"id,omitempty"`
			}{tc.v, json.RawMessage(tc.id)})
			require.NoError(t, err)
			enc, err := json.Marshal(tc.v)
			require.NoError(t, err)
			assert.Equal(t, string(asciiJSON(want)), string(returnLine(json.RawMessage(tc.id), tc.v)))
			assert.Equal(t, string(asciiJSON(want)), string(returnLine(json.RawMessage(tc.id), encodedReturn(enc))))
		})
	}
}

// TestCachedRepliesFollowUpdate checks that a reply encoded once is
// re-encoded after Update changes the guest.
func TestCachedRepliesFollowUpdate(t *testing.T) {
	s := New(Config{HostName: "before", Disabled: []string{guestagent.CmdGetUsers}})
	ask := func(cmd string) string {
		t.Helper()
		reply, err := s.HandleCommand(context.Background(), `{"execute":"`+cmd+`","id":"x"}`)
		require.NoError(t, err)
		return reply
	}
	assert.Equal(t, `{"return":{"host-name":"before"},"id":"x"}`, ask(guestagent.CmdGetHostName))
	assert.Equal(t, `{"return":{"host-name":"before"},"id":"x"}`, ask(guestagent.CmdGetHostName))
	assert.Contains(t, ask(guestagent.CmdGetUsers), "has been disabled")
	infoBefore := ask(guestagent.CmdInfo)

	s.Update(func(c *Config) {
		c.HostName = "after"
		c.Disabled = nil
		c.Users = []guestagent.User{{User: "alice"}}
	})
	assert.Equal(t, `{"return":{"host-name":"after"},"id":"x"}`, ask(guestagent.CmdGetHostName))
	assert.Contains(t, ask(guestagent.CmdGetUsers), `"user":"alice"`)
	assert.NotEqual(t, infoBefore, ask(guestagent.CmdInfo), "guest-info lists the re-enabled command")
	assert.Equal(t, 2, s.Calls(guestagent.CmdInfo))
}
