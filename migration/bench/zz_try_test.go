package bench

import (
	"context"
	"fmt"
	"os"
	"testing"
)

func TestTry(t *testing.T) {
	rows, err := Run(context.Background(), BuiltinProfiles(), []string{"virtkit"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	WriteTable(os.Stdout, rows)
	for _, r := range rows {
		fmt.Println("==", r.Profile)
		for _, d := range r.Decisions {
			fmt.Printf("  %6.1fs it=%v %s\n", d.Elapsed.Seconds(), d.Iteration.Value, d.Action.String())
		}
	}
}
