package recovery

import (
	"context"
	"fmt"
	"strings"
	"time"

	"nodeless-eks/internal/awscli"
	"nodeless-eks/internal/bounds"
)

// The recovery waits for what EKS is still creating, up to
// bounds.RecoveryCluster and bounds.FargateProfile. The import must see an
// ACTIVE object: the cluster's endpoint and certificate, which everything
// after it reads, exist only then, and the Fargate profile schedules
// nothing before.

var eksGone = []string{"ResourceNotFoundException"}

// waitActive asks describe until status leaves "CREATING", up to bound;
// gone is true when EKS no longer knows the object. Only the bound running
// out while it is CREATING is reported as such: a describe that fails
// (refused, throttled, cut off) is reported with its error, and a
// recovery that was stopped says so.
func waitActive(ctx context.Context, l Lookups, what string, bound time.Duration, describe func(ctx context.Context) (status string, found bool, err error)) (status string, gone bool, err error) {
	status, found, err := describe(ctx)
	if err != nil || !found || status != "CREATING" {
		return status, !found, err
	}
	var describeErr error
	expired := false
	err = l.Wait(ctx, bound, func(wctx context.Context) (bool, string, error) {
		s, f, err := describe(wctx)
		if describeErr = err; err != nil {
			// A call the bound cut off is the bound running out.
			expired = wctx.Err() != nil && ctx.Err() == nil
			return false, "", err
		}
		status, found = s, f
		return !found || status != "CREATING", what + " is " + status, nil
	})
	switch {
	case err == nil:
		return status, !found, nil
	case ctx.Err() != nil:
		return status, false, fmt.Errorf("the recovery stopped (%w) while %s was %s", ctx.Err(), what, status)
	case describeErr != nil && !expired:
		return status, false, describeErr
	}
	return status, false, cannotTell("%s was still CREATING after the recovery waited %s", what, bound)
}

func findCluster(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "name")
	if err != nil {
		return absent, err
	}
	var roleArn string
	var created awscli.Time
	status, gone, err := waitActive(ctx, l, "the cluster", bounds.RecoveryCluster, func(ctx context.Context) (string, bool, error) {
		var out struct {
			Cluster struct {
				Status, RoleArn string
				CreatedAt       awscli.Time `json:"createdAt"`
			}
		}
		found, err := awsJSON(ctx, l, t, &out, eksGone, "eks", "describe-cluster", "--name", in[0])
		roleArn, created = out.Cluster.RoleArn, out.Cluster.CreatedAt
		return out.Cluster.Status, found, err
	})
	if err != nil || gone {
		return absent, err
	}
	// A cluster of that name with another role is not the one this create
	// made (the program refuses to create a cluster whose name is taken).
	if want := t.Input("roleArn"); want != "" && roleArn != want {
		return absent, cannotTell("a cluster named %s exists with role %s, not %s as this create sent: it may be another's", in[0], roleArn, want)
	}
	switch status {
	case "ACTIVE", "UPDATING":
		return Found{Exists: true, ID: in[0], Created: created.Time}, nil
	case "FAILED":
		return absent, cannotTell("EKS failed to create cluster %s; delete it (`aws eks delete-cluster --name %s --region %s`), wait until it is gone, "+
			"then %s", in[0], in[0], t.Access.Region, thenClear)
	}
	return absent, cannotTell("cluster %s is %s: wait until it is ACTIVE or gone, then run the recovery again", in[0], status)
}

func findFargateProfile(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "clusterName", "fargateProfileName")
	if err != nil {
		return absent, err
	}
	var created awscli.Time
	status, gone, err := waitActive(ctx, l, "the Fargate profile", bounds.FargateProfile, func(ctx context.Context) (string, bool, error) {
		var out struct {
			FargateProfile struct {
				Status    string
				CreatedAt awscli.Time `json:"createdAt"`
			}
		}
		found, err := awsJSON(ctx, l, t, &out, eksGone, "eks", "describe-fargate-profile", "--cluster-name", in[0], "--fargate-profile-name", in[1])
		created = out.FargateProfile.CreatedAt
		return out.FargateProfile.Status, found, err
	})
	if err != nil || gone {
		return absent, err
	}
	if status != "ACTIVE" {
		return absent, cannotTell("Fargate profile %s is %s; delete it (`aws eks delete-fargate-profile --cluster-name %s --fargate-profile-name %s`), "+
			"wait until it is gone, then %s", in[1], status, in[0], in[1], thenClear)
	}
	return Found{Exists: true, ID: in[0] + ":" + in[1], Created: created.Time}, nil
}

func findAddon(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "clusterName", "addonName")
	if err != nil {
		return absent, err
	}
	var out struct {
		Addon struct {
			Status    string
			CreatedAt awscli.Time `json:"createdAt"`
			Health    struct {
				Issues []struct{ Code, Message string }
			}
		}
	}
	ok, err := awsJSON(ctx, l, t, &out, eksGone, "eks", "describe-addon", "--cluster-name", in[0], "--addon-name", in[1])
	if err != nil || !ok {
		return absent, err
	}
	id := in[0] + ":" + in[1]
	var issues []string
	for _, i := range out.Addon.Health.Issues {
		issues = append(issues, i.Code+": "+i.Message)
	}
	switch out.Addon.Status {
	case "ACTIVE":
		return Found{Exists: true, ID: id, Created: out.Addon.CreatedAt.Time}, nil
	case "CREATING", "DEGRADED", "UPDATING":
		// The create would have waited for ACTIVE; the next run does not
		// wait for an add-on it holds, so say so.
		f := Found{Exists: true, ID: id, Created: out.Addon.CreatedAt.Time, Note: fmt.Sprintf("EKS says it is %s", out.Addon.Status)}
		if len(issues) > 0 {
			f.Note += " (" + strings.Join(issues, "; ") + ")"
		}
		f.Note += "; the add-ons that need nodes turn ACTIVE once Karpenter's nodes join, and `aws eks describe-addon` shows it"
		return f, nil
	}
	return absent, cannotTell("add-on %s is %s (%s); delete it (`aws eks delete-addon --cluster-name %s --addon-name %s`), "+
		"wait until it is gone, then %s", in[1], out.Addon.Status, strings.Join(issues, "; "), in[0], in[1], thenClear)
}
