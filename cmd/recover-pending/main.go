// Command recover-pending resolves what an interrupted `pulumi up` left in
// a stack's state (internal/recovery): each pending create whose object
// exists is imported, each whose object provably does not is cleared,
// and anything it cannot decide stops it, with a report of what to run,
// before it changes anything. Interrupted updates and deletes are left to
// the next run. It also removes a self-managed backend's lock held by a
// pulumi process of this machine that is gone, and readies a Helm release
// whose install or upgrade was cut off.
//
//	go run ./cmd/recover-pending -stack dev            # at the terminal
//	go run ./cmd/recover-pending -stack dev -dry-run   # decide and report only
//
// In a Pulumi Deployments run (deploy/'s pre-run command) the stack comes
// from PULUMI_CI_ORGANIZATION, PULUMI_CI_PROJECT and PULUMI_CI_STACK. It
// needs the pulumi and aws CLIs, the stack's AWS credentials and, for a
// stack with Kubernetes resources, access to its cluster. It exits 0 when
// there was nothing to do or everything was resolved, 1 otherwise.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"nodeless-eks/internal/pulumicloud"
	"nodeless-eks/internal/recovery"
)

func main() {
	stack := flag.String("stack", defaultStack(), "the stack, as `pulumi --stack` takes it (in Deployments: <org>/<project>/<stack> of the run)")
	dir := flag.String("cwd", ".", "the Pulumi project's directory")
	dryRun := flag.Bool("dry-run", false, "decide and report; change nothing")
	settle := flag.Duration("settle", recovery.DefaultSettle, "how long after the state's last write to start looking (AWS's reads are eventually consistent)")
	timeout := flag.Duration("timeout", 45*time.Minute, "the bound of the whole recovery, waits for EKS included")
	flag.Parse()
	if *stack == "" {
		fmt.Fprintln(os.Stderr, "recover-pending: -stack is required outside Pulumi Deployments (the stack whose run was interrupted)")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	cloud, _ := pulumicloud.FromEnvironment()
	if cloud.Token == "" {
		cloud = nil
	}
	s := &recovery.Session{
		Run: recovery.Exec, Dir: *dir, Stack: *stack, Out: os.Stdout, DryRun: *dryRun, Cloud: cloud,
		Options: recovery.Options{Settle: *settle},
	}
	if _, err := s.Recover(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "recover-pending:", err)
		os.Exit(1)
	}
}

// defaultStack is the stack of a Pulumi Deployments run, "" elsewhere.
func defaultStack() string {
	parts := []string{os.Getenv("PULUMI_CI_ORGANIZATION"), os.Getenv("PULUMI_CI_PROJECT"), os.Getenv("PULUMI_CI_STACK")}
	for _, p := range parts {
		if p == "" {
			return ""
		}
	}
	return strings.Join(parts, "/")
}
