// Command review-ttl gives the review stack a Pulumi Deployments run
// updates one time-to-live schedule, expiring -hours after now (see
// internal/reviewttl). deploy/ runs it as a pre-run command of review
// stacks; it reads the run's stack and stack-scoped token from the
// environment Deployments sets (PULUMI_CI_ORGANIZATION, PULUMI_CI_PROJECT,
// PULUMI_CI_STACK, PULUMI_ACCESS_TOKEN) and the API URL from PULUMI_API.
//
// It fails the run on every error but one: an organization whose edition
// has no TTL schedules (Pulumi Cloud answers 402). Then it says that the
// review stack will not expire by itself and lets the update go on, since
// Deployments still destroys a review stack when its pull request is merged
// or closed (Pulumi's review stacks page).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"nodeless-eks/internal/pulumicloud"
	"nodeless-eks/internal/reviewttl"
)

func main() {
	hours := flag.Int("hours", 8, "time to live after this update, in hours")
	flag.Parse()
	if err := run(*hours); err != nil {
		if reviewttl.NotInEdition(err) {
			fmt.Fprintf(os.Stderr, "review-ttl: warning: this organization's Pulumi Cloud edition has no time-to-live schedules (%v). "+
				"Review stack %s will NOT expire after %d hours without an update: Pulumi Deployments destroys it when its pull request "+
				"is merged or closed, and a pull request left open keeps it running, and costing, until then. "+
				"Set reviewStackTtl: false in deploy/'s configuration to stop this check, or move to an edition with TTL stacks "+
				"(Pro or above).\n", err, os.Getenv("PULUMI_CI_STACK"), *hours)
			return
		}
		fmt.Fprintln(os.Stderr, "review-ttl:", err)
		os.Exit(1)
	}
}

func run(hours int) error {
	if hours < 1 {
		return fmt.Errorf("-hours %d: want at least 1", hours)
	}
	stack := reviewttl.Stack{Organization: os.Getenv("PULUMI_CI_ORGANIZATION"), Project: os.Getenv("PULUMI_CI_PROJECT"), Name: os.Getenv("PULUMI_CI_STACK")}
	if stack.Organization == "" || stack.Project == "" || stack.Name == "" {
		return fmt.Errorf("PULUMI_CI_ORGANIZATION, PULUMI_CI_PROJECT and PULUMI_CI_STACK must be set; Pulumi Deployments sets them on every run")
	}
	c, _, err := pulumicloud.Load()
	if err != nil {
		return err
	}
	if c.Token == "" {
		return fmt.Errorf("no Pulumi Cloud token for %s: PULUMI_ACCESS_TOKEN must be set; Pulumi Deployments sets it on every run", c.API)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := reviewttl.Keep(ctx, c, stack, time.Now().Add(time.Duration(hours)*time.Hour))
	if err != nil {
		return err
	}
	what := "moved its time-to-live schedule " + res.Updated
	if res.Resumed {
		what += " and resumed it (it was paused, so it would never have run)"
	}
	if res.Created {
		what = "created its time-to-live schedule"
	}
	fmt.Printf("review stack %s: %s; it is destroyed and removed at %s unless updated again\n", stack.Name, what, res.Expires.Format(time.RFC3339))
	if len(res.Deleted) > 0 {
		fmt.Printf("review stack %s: deleted %d extra time-to-live schedule(s): %s\n", stack.Name, len(res.Deleted), strings.Join(res.Deleted, ", "))
	}
	return nil
}
