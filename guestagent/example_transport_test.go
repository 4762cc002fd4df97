package guestagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/virtkit/virtkit/guestagent"
)

// A scripted transport: the client's requests are answered from a table,
// which is how a caller tests its own code against agent replies (or
// carries them over a channel of its own). The replies are the agent's
// JSON; the client bounds, decodes and sanitizes them as it would a real
// guest's.
func ExampleTransportFunc() {
	replies := map[string]string{
		"guest-get-host-name": `{"return": {"host-name": "web-1"}}`,
		"guest-get-osinfo":    `{"error": {"class": "CommandNotFound", "desc": "not in this script"}}`,
	}
	script := guestagent.TransportFunc(func(ctx context.Context, request []byte) ([]byte, error) {
		var req struct {
			Execute string `json:"execute"`
		}
		if err := json.Unmarshal(request, &req); err != nil {
			return nil, err
		}
		fmt.Println("request:", req.Execute)
		return []byte(replies[req.Execute]), nil
	})
	c := guestagent.New(script, guestagent.Options{})
	ctx := context.Background()

	host, err := c.HostName(ctx)
	fmt.Println(host, err)
	_, err = c.OSInfo(ctx)
	fmt.Println(err)
	fmt.Println(errors.Is(err, guestagent.ErrCommandNotFound))
	// Output:
	// request: guest-get-host-name
	// web-1 <nil>
	// request: guest-get-osinfo
	// guest agent: guest-get-osinfo: CommandNotFound: "not in this script"
	// true
}
