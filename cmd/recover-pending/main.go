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
//	go run ./cmd/recover-pending -stack dev -import '<URN>=<ID>' -clear '<URN>'
//
// -import and -clear are a person's answers for the pending creates it
// reported as undecided; it applies them as it applies its own (Pulumi's
// `pulumi refresh --import-pending-creates` drops the object from the
// state instead: docs/recovery.md).
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
	decisions := map[string]recovery.Decision{}
	flag.Func("import", "`URN=ID`: import this pending create with this ID (repeatable)", func(v string) error {
		urn, id, err := splitDecision(v)
		decisions[urn] = recovery.Decision{Import: true, ID: id}
		return err
	})
	flag.Func("clear", "`URN`: clear this pending create, whose object you know does not exist (repeatable)", func(v string) error {
		if !strings.HasPrefix(v, "urn:pulumi:") {
			return fmt.Errorf("%q is not a URN (urn:pulumi:...)", v)
		}
		decisions[v] = recovery.Decision{}
		return nil
	})
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
		Options: recovery.Options{Settle: *settle, Decisions: decisions},
	}
	if _, err := s.Recover(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "recover-pending:", err)
		os.Exit(1)
	}
}

// splitDecision reads URN=ID. A URN holds no "=" after its last "::"
// unless its resource's name does, so the ID begins at the first "=" after
// the last "::".
func splitDecision(v string) (urn, id string, err error) {
	i := strings.LastIndex(v, "::")
	j := strings.Index(v[max(i, 0):], "=")
	if !strings.HasPrefix(v, "urn:pulumi:") || i < 0 || j < 0 || v[i+j+1:] == "" {
		return "", "", fmt.Errorf("%q: want <URN>=<ID>", v)
	}
	return v[:i+j], v[i+j+1:], nil
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
