package cleanup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"nodeless-eks/internal/awscli"
	"nodeless-eks/internal/kubeapi"
)

// eksCluster is the cluster a kubeconfig authenticates to through `aws eks
// get-token` (pulumi-eks writes the exec plugin as `aws --region <region>
// eks get-token --cluster-name <name>`, with `--role <arn>` when its
// provider assumes a role and AWS_PROFILE in its env when it has a
// profile: nodejs/eks/cluster.ts, kubeconfig), and what the program says
// of the cluster it created: its ARN, and when EKS created it. EKS's word
// that the cluster is gone counts only from the ARN's account and region,
// asked with the kubeconfig's own credentials, role included.
type eksCluster struct {
	Name, Region string
	Env          []string
	// Access is the kubeconfig's profile and role, or the stack's aws
	// provider's credentials (EnvAWSAccess).
	Access awscli.Access
	// Arn and CreatedAt are the created cluster's (EnvClusterArn,
	// EnvClusterCreatedAt).
	Arn, CreatedAt string
}

// eksClusterOf reads the cluster from a kubeconfig's exec plugin; ok is
// false when the plugin is not the AWS CLI's get-token.
func eksClusterOf(kubeconfigJSON string) (eksCluster, bool) {
	command, args, env, ok := kubeapi.ExecPlugin(kubeconfigJSON)
	if !ok || command != "aws" || !strings.Contains(" "+strings.Join(args, " ")+" ", " eks get-token ") {
		return eksCluster{}, false
	}
	c := eksCluster{Env: env}
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--cluster-name":
			c.Name = args[i+1]
		case "--region":
			c.Region = args[i+1]
		case "--profile":
			c.Access.Profile = args[i+1]
		case "--role", "--role-arn": // the CLI takes --role-arn; pulumi-eks writes --role
			c.Access.Role = &awscli.Role{RoleArn: args[i+1]}
		}
	}
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "AWS_PROFILE="); ok && c.Access.Profile == "" {
			c.Access.Profile = v
		}
	}
	return c, c.Name != ""
}

// arnParts are the region and account of an EKS cluster's ARN,
// arn:<partition>:eks:<region>:<account>:cluster/<name>.
func arnParts(arn string) (region, account, name string, ok bool) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "eks" || !strings.HasPrefix(parts[5], "cluster/") {
		return "", "", "", false
	}
	return parts[3], parts[4], strings.TrimPrefix(parts[5], "cluster/"), true
}

// aws runs the AWS CLI with the kubeconfig's env and creds laid over it
// ("AWS_PROFILE=" unsets it).
func (c eksCluster) aws(ctx context.Context, creds []string, args ...string) ([]byte, error) {
	full := append(args, "--output", "json")
	if c.Region != "" {
		full = append(full, "--region", c.Region)
	}
	out, stderr, err := awscli.Exec(ctx, append(slices.Clone(c.Env), creds...), "aws", full...)
	if err != nil {
		return nil, awscli.NewError(full, stderr, err)
	}
	return out, nil
}

// session is the environment of c.Access: its profile, and a session of
// each of its roles, as `aws eks get-token --role` assumes the
// kubeconfig's.
func (c eksCluster) session(ctx context.Context) ([]string, error) {
	return c.Access.Environ(ctx, c.aws, "nodeless-eks-destroy-cleanup")
}

// exists asks EKS, through the AWS CLI the kubeconfig already needs,
// whether the cluster the program created still exists: `aws eks
// describe-cluster` answers its status, or fails with
// ResourceNotFoundException for a cluster that is gone (EKS API reference,
// DescribeCluster errors). Its answer counts only from the account and
// region of the cluster's ARN, proven with `aws sts get-caller-identity`
// through the same credentials: from any other account every cluster is
// "not found". A cluster of the same name created at another time is
// refused, naming both times: it is either the stack's own, replaced by
// an `up` that failed before it updated the record, or another's. Any
// other failure is no answer.
func (c eksCluster) exists(ctx context.Context) (bool, string, error) {
	region, account, name, ok := arnParts(c.Arn)
	switch {
	case !ok:
		return false, "", fmt.Errorf("the program gave no cluster ARN (%s is %q), so nothing shows which account EKS would answer for; "+
			"run `pulumi up` once with this version, which gives it, or the ways out below", EnvClusterArn, c.Arn)
	case name != c.Name:
		return false, "", fmt.Errorf("the kubeconfig names cluster %s, the program's ARN %s", c.Name, c.Arn)
	case c.Region != "" && c.Region != region:
		return false, "", fmt.Errorf("the kubeconfig asks EKS in %s, and the cluster is in %s (%s)", c.Region, region, c.Arn)
	}
	c.Region = region
	creds, err := c.session(ctx)
	if err != nil {
		return false, "", err
	}
	callerAccount, callerArn, err := awscli.CallerIdentity(ctx, c.aws, creds)
	if err != nil {
		return false, "", err
	}
	if callerAccount != account {
		return false, "", fmt.Errorf("the credentials the kubeconfig uses are for account %s (%s), and cluster %s is in account %s: "+
			"EKS's answer from there says nothing of it. Run `pulumi destroy` with the stack's own credentials (its aws:profile or "+
			"aws:assumeRole)", callerAccount, callerArn, c.Name, account)
	}
	out, err := c.aws(ctx, creds, "eks", "describe-cluster", "--name", c.Name)
	if err != nil {
		if awscli.IsCode(err, "ResourceNotFoundException") {
			return false, "", nil
		}
		return false, "", err
	}
	var described struct {
		Cluster struct {
			Status, Arn string
			CreatedAt   awscli.Time `json:"createdAt"`
		} `json:"cluster"`
	}
	if err := json.Unmarshal(out, &described); err != nil || described.Cluster.Status == "" {
		return false, "", fmt.Errorf("aws eks describe-cluster --name %s printed no cluster status (%v)", c.Name, err)
	}
	if c.CreatedAt != "" && !sameTime(c.CreatedAt, described.Cluster.CreatedAt) {
		// Not proof that the program's cluster is gone: a failed `up` that
		// replaced the cluster leaves the cleanup's record of it stale.
		return false, "", fmt.Errorf("EKS cluster %s (%s) exists, created %s, while the stack recorded the cluster it made as created %s: "+
			"either an `up` that replaced the cluster failed before it updated the destroy cleanup's record (run `pulumi up`, "+
			"which records the live cluster, then `pulumi destroy` again), or the stack's cluster is gone and another of the same "+
			"name took its place (check that it is not this stack's, then set NODELESS_EKS_SKIP_DESTROY_CLEANUP=true)",
			c.Name, c.Arn, described.Cluster.CreatedAt.UTC().Format(time.RFC3339), c.CreatedAt)
	}
	return true, described.Cluster.Status, nil
}

// markKept tags each EBS volume the cleanup keeps with KeptTagKey, its
// value the PersistentVolume's name, in the cluster's account and region
// (the ARN's), with the kubeconfig's credentials.
func (c eksCluster) markKept(ctx context.Context, volumes map[string]string) error {
	if region, _, _, ok := arnParts(c.Arn); ok {
		c.Region = region
	}
	creds, err := c.session(ctx)
	if err != nil {
		return err
	}
	// Each on its own: a static volume made by hand carries no cluster tag,
	// which the deploy role's grant asks for, and the others are marked.
	var failed []error
	for _, id := range slices.Sorted(maps.Keys(volumes)) {
		if _, err := c.aws(ctx, creds, "ec2", "create-tags", "--resources", id, "--tags", "Key="+KeptTagKey+",Value="+volumes[id]); err != nil {
			failed = append(failed, fmt.Errorf("%s: %w", id, err))
		}
	}
	return errors.Join(failed...)
}

// sameTime compares pulumi-aws's createdAt (RFC 3339) with EKS's as the
// CLI printed it, to the second. Times it cannot read count as the same:
// only a proven difference makes the cluster another.
func sameTime(created string, described awscli.Time) bool {
	ta, err := time.Parse(time.RFC3339, created)
	if err != nil || described.IsZero() {
		return true
	}
	return ta.Truncate(time.Second).Equal(described.Truncate(time.Second))
}
