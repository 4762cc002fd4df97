package store_test

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// Read-only watchers share one copy of each change; a test store with
// CheckReadOnlyEvents reports a watcher that modified one anyway.
func ExampleWatchOptions_readOnly() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := store.NewMemoryWithOptions(store.Options{CheckReadOnlyEvents: true})
	if err != nil {
		panic(err)
	}
	a, _ := s.Watch(ctx, &virtkit.NodeList{}, store.WatchOptions{ReadOnly: true})
	b, _ := s.Watch(ctx, &virtkit.NodeList{}, store.WatchOptions{ReadOnly: true})
	if err := s.Create(ctx, &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}); err != nil {
		panic(err)
	}
	ea, eb := <-a, <-b
	fmt.Println("one object for both watchers:", ea.Object == eb.Object)
	fmt.Println("violations:", s.ReadOnlyViolations())

	// A watcher that needs to change an event's object copies it first.
	n := ea.Object.(*virtkit.Node).DeepCopy()
	n.Labels = map[string]string{"mine": "yes"}
	fmt.Println("violations after changing a copy:", s.ReadOnlyViolations())
	// Output:
	// one object for both watchers: true
	// violations: <nil>
	// violations after changing a copy: <nil>
}
