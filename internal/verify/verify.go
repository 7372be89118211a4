// Package verify holds the checks the acceptance test runs against a real
// cluster and account: where the Karpenter and CoreDNS pods run, whether
// the NodePools are ready, a scale-out and scale-in through Karpenter, and
// the sweep for anything Karpenter left behind after destroy. Every check
// takes interfaces, so it is tested offline against fakes.
package verify

import (
	"context"
	"fmt"
	"time"
)

// Poll checks cond every interval until it reports done, ctx ends, or
// timeout passes; on timeout the error carries cond's last status.
func Poll(ctx context.Context, timeout, interval time.Duration, cond func(context.Context) (done bool, status string, err error)) error {
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
