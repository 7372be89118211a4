package main

import (
	"fmt"

	"nodeless-eks/internal/deployerpolicy"
	"nodeless-eks/internal/iampolicy"
)

// Pulumi Cloud's OIDC issuer, for Deployments and for ESC alike.
const (
	oidcIssuerURL = "https://api.pulumi.com/oidc"
	oidcIssuerKey = "api.pulumi.com/oidc"
)

// deployRoleName starts the names of the deploy roles and of the workload
// boundary; config refuses a cluster name that starts alike.
const deployRoleName = deployerpolicy.DeployRolePrefix

// DeploymentsSubject is the subject of a Pulumi Deployments OIDC token for
// one operation on one stack (op "*" for any):
// pulumi:deploy:org:<org>:project:<project>:stack:<stack>:operation:<op>:scope:write
// (https://www.pulumi.com/docs/deployments/deployments/oidc/). Its audience
// is the organization's name.
func DeploymentsSubject(org, project, stack, op string) string {
	return fmt.Sprintf("pulumi:deploy:org:%s:project:%s:stack:%s:operation:%s:scope:write", org, project, stack, op)
}

// updateOperations are the Deployments operations a stack that previews no
// pull request needs: a preview would run a branch's code with its role.
// Pulumi's OIDC page (deployments/guides/oidc) names the subject's
// operation as "one of preview, update, refresh, or destroy"; a drift
// run's operation is detect-drift or remediate-drift by its
// PULUMI_CI_OPERATION and the API's PulumiOperation, which page does not
// say it presents. The trust admits both spellings of a drift run, so
// that either is covered; neither is a preview.
var updateOperations = []string{"update", "refresh", "destroy", "detect-drift", "remediate-drift"}

// reviewRoleKey names the review stacks' role, deploy-review.
const reviewRoleKey = "review"

// deployRole is one deploy role: whose runs may assume it, in which
// account, and which cluster's resources it may create and change.
type deployRole struct {
	// Key names the role ("deploy-<key>"): the stack, or "review".
	Key string
	// Account is the key of the account the role lives in; Region the
	// region of its cluster.
	Account, Region string
	// Stack is the named stack whose runs assume it; "" for the review
	// role.
	Stack string
	// ReviewStackPrefix, for the review role, admits every stack so named.
	ReviewStackPrefix string
	// Cluster is the cluster name the role may manage; ClusterPrefix, for
	// the review role, admits every name it starts.
	Cluster, ClusterPrefix string
}

// Roles are the deploy roles, one per named stack, each trusted by its
// stack's runs alone and reaching only its cluster, and one for the review
// stacks, scoped to their cluster names: a run can touch no other stack's
// resources, and a review run, which runs a pull request's code, touches
// only review clusters.
func Roles(c *Config) []deployRole {
	var roles []deployRole
	for _, name := range sortedKeys(c.Stacks) {
		s := c.Stacks[name]
		roles = append(roles, deployRole{Key: name, Account: s.Account, Region: s.Region, Stack: name, Cluster: s.ClusterName})
	}
	if r := c.Review; r != nil {
		roles = append(roles, deployRole{Key: reviewRoleKey, Account: r.Account, Region: r.Region, ReviewStackPrefix: r.Prefix,
			ClusterPrefix: r.ClusterPrefix})
	}
	return roles
}

// RoleOf is the role of a named stack, or the review role for the review
// template (whose settings the review stacks copy).
func RoleOf(c *Config, stack string) deployRole {
	for _, r := range Roles(c) {
		if r.Stack == stack || (c.Review != nil && stack == c.Review.Template && r.Key == reviewRoleKey) {
			return r
		}
	}
	panic("deploy: no role for stack " + stack)
}

// scope is the role's reach, for its deployer policy and boundary.
func (r deployRole) scope(c *Config, partition string) deployerpolicy.Scope {
	account := c.Accounts[r.Account].ID
	return deployerpolicy.Scope{Partition: partition, Region: r.Region, Account: account, Cluster: r.Cluster, Prefix: r.ClusterPrefix,
		BoundaryArn: BoundaryArn(c, partition, account, r.Key)}
}

// BoundaryArn is the ARN IAM gives the boundary of key (a policy without a
// path).
func BoundaryArn(c *Config, partition, account, key string) string {
	return fmt.Sprintf("arn:%s:iam::%s:policy/%s", partition, account, BoundaryName(c, key))
}

// BoundaryName is the name of the permissions boundary of a role's runs
// (key is the stack, or "review"), which the stack's iamPermissionsBoundary
// names.
func BoundaryName(c *Config, key string) string {
	return deployRoleName + c.Project + "-" + key + "-boundary"
}

// TrustPolicy lets a deploy role be assumed through its account's Pulumi
// Cloud OIDC provider by the Deployments runs of its stack (all but
// previews: no named stack previews a pull request, and a preview is the
// operation that runs a branch's code), or, for the review role, by the
// runs of the review stacks.
func TrustPolicy(c *Config, r deployRole, providerArn string) (string, error) {
	var subjects []string
	for _, op := range updateOperations {
		if r.Stack != "" {
			subjects = append(subjects, DeploymentsSubject(c.Organization, c.Project, r.Stack, op))
		}
	}
	if r.ReviewStackPrefix != "" {
		subjects = append(subjects, DeploymentsSubject(c.Organization, c.Project, r.ReviewStackPrefix+"*", "*"))
	}
	return iampolicy.New(iampolicy.Statement{
		Sid: "PulumiDeployments", Effect: "Allow", Principal: map[string]any{"Federated": providerArn},
		Action: "sts:AssumeRoleWithWebIdentity",
		Condition: map[string]any{
			"StringEquals": map[string]any{oidcIssuerKey + ":aud": c.Organization},
			"StringLike":   map[string]any{oidcIssuerKey + ":sub": subjects},
		},
	}).JSON()
}
