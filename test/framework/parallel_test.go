package framework

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

func TestParallel(t *testing.T) {
	t.Run("runs every index once", func(t *testing.T) {
		var seen [100]atomic.Int32
		if err := Parallel(context.Background(), len(seen), 8, func(i int) error { seen[i].Add(1); return nil }); err != nil {
			t.Fatal(err)
		}
		for i := range seen {
			if n := seen[i].Load(); n != 1 {
				t.Errorf("index %d ran %d times", i, n)
			}
		}
	})
	t.Run("returns an error and stops handing out indexes", func(t *testing.T) {
		boom := errors.New("boom")
		var ran atomic.Int32
		err := Parallel(context.Background(), 10000, 2, func(i int) error {
			ran.Add(1)
			if i == 3 {
				return boom
			}
			return nil
		})
		if !errors.Is(err, boom) {
			t.Errorf("error %v, want %v", err, boom)
		}
		if ran.Load() == 10000 {
			t.Error("every index ran after the error")
		}
	})
	t.Run("stops when the context is done", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		// A worker ready for the next index competes with ctx.Done in a select, so a few
		// indexes may run; not a thousand.
		if err := Parallel(ctx, 1000, 1, func(int) error { return nil }); !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want %v", err, context.Canceled)
		}
	})
}
