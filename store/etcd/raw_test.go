package etcd_test

import (
	"testing"

	"github.com/virtkit/virtkit/store/etcd"
	"github.com/virtkit/virtkit/store/storetest"
)

func TestRaw(t *testing.T) {
	newStore := newStoreFactory(t, etcd.Options{})
	storetest.RunRaw(t, func(t *testing.T) storetest.RawStore { return newStore(t) })
}
