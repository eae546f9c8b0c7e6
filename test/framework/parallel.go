package framework

import (
	"context"
	"sync"
)

// Parallel runs f(0), …, f(n-1) on workers goroutines, the way benchmarks create and
// change many objects at once, and returns the first error f returned. After an error, or
// once ctx is done, it hands out no further index but waits for the calls running.
func Parallel(ctx context.Context, n, workers int, f func(int) error) error {
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					// The first errors are enough: a full buffer drops the rest rather than
					// blocking the worker.
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	var err error
loop:
	for i := range n {
		select {
		case next <- i:
		case err = <-errs:
			break loop
		case <-ctx.Done():
			err = ctx.Err()
			break loop
		}
	}
	close(next)
	wg.Wait()
	if err != nil {
		return err
	}
	select {
	case err = <-errs:
		return err
	default:
		return nil
	}
}
