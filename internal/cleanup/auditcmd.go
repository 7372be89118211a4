package cleanup

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"nodeless-eks/internal/awscli"
)

// AuditCommandName is the subcommand of the plugin binary (and of
// cmd/destroy-cleanup) that runs the leftover audit without a stack: for
// a stack whose state is lost, or a cluster deleted out of band.
const AuditCommandName = "audit-leftovers"

// auditCommandTimeout bounds AuditCommand: its looks, and its deletes.
const auditCommandTimeout = 15 * time.Minute

// AuditCommand lists what cluster's controllers left in AWS, as the
// destroy's audit does, with the AWS CLI and the credentials of the
// environment (AWS_PROFILE and the rest, as `aws` reads them). It prints
// the account they are for. With --delete it deletes what it listed, only
// once EKS says no cluster of that name exists in the region (a running
// one's controllers still own it) and --account names that account; it
// then looks again and fails over anything left.
func AuditCommand(ctx context.Context, args []string, out io.Writer) error {
	flags := flag.NewFlagSet(AuditCommandName, flag.ContinueOnError)
	flags.SetOutput(out)
	cluster := flags.String("cluster", "", "the EKS cluster's name (required)")
	region := flags.String("region", "", "its region (required)")
	remove := flags.Bool("delete", false, "delete what is listed; needs --account")
	account := flags.String("account", "", "with --delete: the account the credentials are for, as this command prints it")
	if err := flags.Parse(args); err != nil {
		return err
	}
	switch {
	case *cluster == "" || *region == "":
		return fmt.Errorf("%s: --cluster and --region are required, e.g. %s --cluster eks-demo --region eu-west-1", AuditCommandName, AuditCommandName)
	case flags.NArg() > 0:
		return fmt.Errorf("%s: unexpected arguments %q", AuditCommandName, flags.Args())
	case *remove && *account == "":
		return fmt.Errorf("%s: --delete needs --account <id>, the account the credentials are for (run without --delete: it prints it)", AuditCommandName)
	}
	// Bounded: each call answers in seconds, and a credential process
	// that waits for a login would otherwise hold the command for good.
	ctx, cancel := context.WithTimeout(ctx, auditCommandTimeout)
	defer cancel()
	// The CLI as the destroy's phases run it (output, region), with the
	// shell's credentials; a delete's own --region is the same one.
	c := eksCluster{Region: *region}
	aws := func(ctx context.Context, args ...string) ([]byte, error) { return c.aws(ctx, nil, args...) }
	caller, callerArn, err := awscli.CallerIdentity(ctx, c.aws, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "the credentials are for account %s (%s); looking for what cluster %s's controllers left in %s\n", caller, callerArn, *cluster, *region)
	left, err := leftovers(ctx, aws, *cluster, *region)
	if err != nil {
		return err
	}
	if len(left) == 0 {
		fmt.Fprintf(out, "nothing cluster %s's controllers made is left in account %s, %s\n", *cluster, caller, *region)
		return nil
	}
	for _, l := range left {
		fmt.Fprintln(out, "  "+l.String())
	}
	if !*remove {
		fmt.Fprintf(out, "%d object(s) left; delete each with its command, or run again with --delete --account %s\n", len(left), caller)
		return nil
	}
	if *account != caller {
		return fmt.Errorf("--account %s, and the credentials are for account %s: nothing deleted", *account, caller)
	}
	if _, err := aws(ctx, "eks", "describe-cluster", "--name", *cluster); err == nil {
		return fmt.Errorf("EKS cluster %s exists in %s (account %s): its controllers own what is listed; nothing deleted. Delete the "+
			"cluster's stack first (`pulumi destroy`, which cleans and audits), or the cluster", *cluster, *region, caller)
	} else if !awscli.IsCode(err, "ResourceNotFoundException") {
		return fmt.Errorf("asking EKS whether cluster %s still exists failed, so nothing is deleted: %w", *cluster, err)
	}
	var failed []error
	for _, l := range left {
		if err := deleteLeftover(ctx, aws, l); err != nil {
			failed = append(failed, fmt.Errorf("%s: %w", l.what, err))
			continue
		}
		fmt.Fprintf(out, "deleted %s\n", l.what)
	}
	if err := errors.Join(failed...); err != nil {
		return fmt.Errorf("%w\nrun again in a minute: a volume cannot go while the instance it is attached to terminates", err)
	}
	again, err := leftovers(ctx, aws, *cluster, *region)
	if err != nil {
		return err
	}
	if len(again) > 0 {
		return fmt.Errorf("still there after the deletes (an instance's volume goes once it has terminated; run again in a minute):\n  %s",
			strings.Join(lines(again), "\n  "))
	}
	fmt.Fprintf(out, "nothing cluster %s's controllers made is left in account %s, %s\n", *cluster, caller, *region)
	return nil
}

func deleteLeftover(ctx context.Context, aws networkAWS, l leftover) error {
	for _, c := range l.delete {
		if _, err := aws(ctx, c...); err != nil {
			return err
		}
	}
	return nil
}
