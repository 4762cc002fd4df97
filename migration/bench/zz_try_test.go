package bench

import (
	"context"
	"os"
	"testing"
)

func TestTry(t *testing.T) {
	rows, err := Run(context.Background(), BuiltinProfiles(), PolicyNames(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	WriteTable(os.Stdout, rows)
}
