// Package poll waits for a condition, for the acceptance checks and for
// the destroy cleanup alike.
package poll

import (
	"context"
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
			return fmt.Errorf("timed out after %s: %s", timeout, status)
		case <-ticker.C:
		}
	}
}
