package leader_test

import (
	"context"
	"fmt"

	"github.com/virtkit/virtkit/internal/leader"
)

// Without an etcd client (the memory store of a single process) the caller
// is the leader at once. With Options.Client set, Run blocks in the
// campaign until this replica leads.
func ExampleRun() {
	err := leader.Run(context.Background(), leader.Options{
		Identity: "controller-0",
		OnLeader: func(id string) { fmt.Println("leader:", id) },
	}, func(ctx context.Context) error {
		fmt.Println("running the controllers")
		return nil
	})
	fmt.Println("err:", err)
	// Output:
	// leader: controller-0
	// running the controllers
	// err: <nil>
}
