// Package poll waits for a condition, for the acceptance checks, the
// destroy cleanup and the bootstrap watch alike.
package poll

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Until checks cond every interval until it reports done, ctx ends, or
// timeout passes; on timeout the error carries cond's last status.
func Until(ctx context.Context, timeout, interval time.Duration, cond func(context.Context) (done bool, status string, err error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var status string
	for {
		done, s, err := cond(ctx)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		status = s
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return fmt.Errorf("stopped (%w): %s", ctx.Err(), status)
			}
			return fmt.Errorf("timed out after %s: %s", timeout, status)
		case <-ticker.C:
		}
	}
}

// Sleep waits d, or less if ctx ends first, which it reports.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
