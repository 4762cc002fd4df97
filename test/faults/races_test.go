//go:build faults

package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

// create stores a new VM, waiting while an earlier VM of the same name is
// still being deleted (its finalizers not yet released).
func (c *testCluster) create(ctx context.Context, name string) error {
	obj := vm(c.t, name, "race")
	virtkit.SetDefaults(obj)
	for {
		err := c.st.Create(ctx, obj.DeepCopyObject().(virtkit.Object))
		if !errors.Is(err, store.ErrAlreadyExists) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("create %s: the old VM never went away: %w", name, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (c *testCluster) remove(ctx context.Context, name string) error {
	v := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	err := c.st.Delete(ctx, v, store.DeleteOptions{})
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// settle waits until VM name is either gone or not being deleted, and
// returns whether it exists.
func (c *testCluster) settle(ctx context.Context, name string) (bool, error) {
	for {
		v := &virtkit.VirtualMachine{}
		err := c.st.Get(ctx, store.Key{Namespace: namespace, Name: name}, v)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		if err == nil && v.DeletionTimestamp == nil {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("settle %s: %w", name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func jitter(max time.Duration) { time.Sleep(rand.N(max)) }

// TestDeletesRacingCreates deletes VMs while the controllers and node
// agents are still creating their VMIs and guests, re-creates them while the
// old incarnation is being torn down, and races applies against deletes of
// the same name. At the end every VM that exists runs exactly once and
// nothing of a deleted VM is left.
func TestDeletesRacingCreates(t *testing.T) {
	c := startWithVMs(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 64)

	// Sequences per name: create, delete after 0-300 ms, again; even names
	// end created, odd ones deleted.
	seq := names("race", 12)
	for i, name := range seq {
		wg.Go(func() {
			rounds := 3
			for r := range rounds {
				c.mon.inFlux(name)
				if err := c.create(ctx, name); err != nil {
					errs <- err
					return
				}
				c.mon.want(name)
				if r == rounds-1 && i%2 == 0 {
					return
				}
				jitter(300 * time.Millisecond)
				c.mon.unwant(name)
				if err := c.remove(ctx, name); err != nil {
					errs <- err
					return
				}
				jitter(100 * time.Millisecond)
			}
		})
	}
	// Existing running VMs deleted while new ones start.
	for _, name := range names("vm", baseVMs)[:4] {
		wg.Go(func() {
			jitter(500 * time.Millisecond)
			c.mon.unwant(name)
			if err := c.remove(ctx, name); err != nil {
				errs <- err
			}
		})
	}
	// Applies and creates racing deletes of the same name: the outcome is
	// read once the VM settles.
	pairs := names("pair", 6)
	for i, name := range pairs {
		wg.Go(func() {
			if err := c.create(ctx, name); err != nil {
				errs <- err
				return
			}
			c.mon.want(name)
			jitter(400 * time.Millisecond)
			c.mon.inFlux(name)
			var inner sync.WaitGroup
			inner.Go(func() {
				if i%2 == 1 {
					// A create waits out the deletion and wins.
					if err := c.create(ctx, name); err != nil {
						errs <- err
					}
					return
				}
				// An apply updates the VM if it still exists (then the
				// delete wins) and fails with NotFound if it vanished
				// between its create and its update.
				if err := cluster.ApplyOne(ctx, c.st, vm(t, name, "apply")); err != nil && !errors.Is(err, store.ErrNotFound) {
					errs <- err
				}
			})
			inner.Go(func() {
				if err := c.remove(ctx, name); err != nil {
					errs <- err
				}
			})
			inner.Wait()
			exists, err := c.settle(ctx, name)
			if err != nil {
				errs <- err
				return
			}
			if exists {
				c.mon.want(name)
			} else {
				c.mon.unwant(name)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	want := c.mon.wantedVMs()
	t.Logf("after the races %d VMs are wanted: %v", len(want), want)
	c.finish(convergeTimeout)
}

// TestConcurrentAppliers runs twenty `virtkit apply` processes at once:
// eight apply the same manifest, six apply the same VMs with different
// labels, six apply VMs of their own. Every apply succeeds, every VM is
// created once (one uid, one VMI), and a contended VM ends with one of the
// labels that were applied.
func TestConcurrentAppliers(t *testing.T) {
	c := startWithVMs(t)
	shared := names("shared", 4)
	contended := names("contended", 3)
	var own [][]string
	type applier struct {
		label string
		vms   []string
	}
	var appliers []applier
	for range 8 {
		appliers = append(appliers, applier{"shared", shared})
	}
	for i := range 6 {
		appliers = append(appliers, applier{fmt.Sprintf("a%d", i), contended})
	}
	for i := range 6 {
		vms := names(fmt.Sprintf("own%d", i), 2)
		own = append(own, vms)
		appliers = append(appliers, applier{fmt.Sprintf("own%d", i), vms})
	}
	require.Len(t, appliers, 20)
	store := "etcd://" + c.etcd.ClientAddr()
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, len(appliers))
	for i, a := range appliers {
		file := filepath.Join(c.dir, fmt.Sprintf("applier-%02d.yaml", i))
		require.NoError(t, os.WriteFile(file, []byte(vmManifest(a.label, a.vms...)), 0o644))
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, "apply", "-f", file, "--store", store)
			<-start
			out, err := cmd.CombinedOutput()
			if err != nil {
				errs[i] = fmt.Errorf("applier %d (%s): %w: %s", i, a.label, err, out)
			}
		})
	}
	began := time.Now()
	close(start)
	wg.Wait()
	t.Logf("20 appliers finished in %v", time.Since(began).Round(100*time.Millisecond))
	for _, err := range errs {
		assert.NoError(t, err)
	}
	all := append(append([]string(nil), shared...), contended...)
	for _, vms := range own {
		all = append(all, vms...)
	}
	for _, n := range all {
		c.mon.want(n)
	}
	c.finish(convergeTimeout)
	ctx, cancel := c.ctx()
	defer cancel()
	for _, n := range all {
		v := &virtkit.VirtualMachine{}
		require.NoError(t, c.st.Get(ctx, storeKey(n), v))
		assert.Equal(t, 1, c.mon.incarnationsOf(n), "%s: one VMI", n)
		label := v.Labels["applier"]
		switch {
		case strings.HasPrefix(n, "contended"):
			assert.Regexp(t, `^a[0-5]$`, label, n)
		case strings.HasPrefix(n, "shared"):
			assert.Equal(t, "shared", label, n)
		default:
			assert.Equal(t, strings.Split(n, "-")[0], label, n)
		}
	}
}

func storeKey(name string) store.Key { return store.Key{Namespace: namespace, Name: name} }
