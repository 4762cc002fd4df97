package store_test

import (
	"testing"

	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/storetest"
)

func TestMemoryRaw(t *testing.T) {
	storetest.RunRaw(t, func(t *testing.T) storetest.RawStore { return newTestMemory(t, store.Options{}) })
}
