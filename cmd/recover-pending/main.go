// Command recover-pending resolves what an interrupted `pulumi up` left in
// a stack's state (internal/recovery): each pending create whose object
// exists is imported, each whose object provably does not is cleared,
// and anything it cannot decide stops it, with a report of what to run,
// before it changes anything. Interrupted updates and deletes are left to
// the next run. It never removes a lock: a file:// backend's lock stops
// it, naming the holder, `pulumi cancel` and the -since to give; other
// backends refuse its state write while a run holds the stack. Helm
// releases are a person's to decide: their report gives the command that
// deletes a record left pending-install.
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
// needs the pulumi and aws CLIs and the stack's AWS credentials. It exits 0 when
// there was nothing to do or everything was resolved, 1 otherwise.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"nodeless-eks/internal/awscli"
	"nodeless-eks/internal/bounds"
	"nodeless-eks/internal/recovery"
)

func main() {
	stack := flag.String("stack", defaultStack(), "the stack, as `pulumi --stack` takes it (in Deployments: <org>/<project>/<stack> of the run)")
	dir := flag.String("cwd", ".", "the Pulumi project's directory")
	dryRun := flag.Bool("dry-run", false, "decide and report; change nothing")
	settle := flag.Duration("settle", bounds.RecoverySettle, "how long after the state's last write to start looking (AWS's reads are eventually consistent)")
	timeout := flag.Duration("timeout", bounds.Recovery, "the bound of the whole recovery, waits for EKS included")
	var since time.Time
	flag.Func("since", "`TIME` (RFC 3339) the interrupted run started, as its log shows: for a stack whose `pulumi stack history` holds "+
		"no update (the first `up` of a self-managed stack); nothing made before it is adopted", func(v string) error {
		t, err := time.Parse(time.RFC3339, v)
		since = t
		return err
	})
	decisions := map[string]recovery.Decision{}
	flag.Func("import", "`URN=ID`: import this pending create with this ID (repeatable)", func(v string) error {
		urn, id, err := splitDecision(v)
		if err != nil {
			return err
		}
		decisions[urn] = recovery.Decision{Import: true, ID: id}
		return nil
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
	s := &recovery.Session{
		Run: awscli.Exec, Dir: *dir, Stack: *stack, Out: os.Stdout, DryRun: *dryRun,
		Options: recovery.Options{Settle: *settle, Decisions: decisions, Since: since},
	}
	if _, err := s.Recover(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "recover-pending:", err)
		os.Exit(1)
	}
}

// splitDecision reads URN=ID. A URN is
// urn:pulumi:<stack>::<project>::<type>::<name>, and its name is all that
// follows the third "::" (URN.Name in pulumi/pulumi
// sdk/go/common/resource/urn/urn.go); stack, project and type hold no
// "::" and no "=". The ID begins at the first "=" of the name part, so an
// ID may hold "=" and "::" (an IAM ARN) and a name may hold "::", not "=".
// A URN cut wrong names no pending create, which Plan refuses.
func splitDecision(v string) (urn, id string, err error) {
	bad := fmt.Errorf("%q: want <URN>=<ID>", v)
	rest, ok := strings.CutPrefix(v, "urn:pulumi:")
	if !ok {
		return "", "", bad
	}
	for range 3 {
		i := strings.Index(rest, "::")
		if i < 0 || strings.Contains(rest[:i], "=") {
			return "", "", bad
		}
		rest = rest[i+2:]
	}
	name, id, ok := strings.Cut(rest, "=")
	if !ok || name == "" || id == "" {
		return "", "", bad
	}
	return v[:len(v)-len(id)-1], id, nil
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
