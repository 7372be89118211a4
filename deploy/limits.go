package main

import (
	"fmt"
	"sort"

	"nodeless-eks/internal/iampolicy"
	"nodeless-eks/internal/names"
)

// limit is a quota of IAM that the fleet must stay within: default values
// from the IAM user guide (reference_iam-quotas.html, "IAM object quotas"
// and "IAM name and ID quotas"); the adjustable ones can be raised through
// Service Quotas, which this program does not assume. Per-account counts
// are what deploy/ creates and what the stacks' clusters create
// (clusterIAM); anything else in the account counts against the quota
// too.
type limit struct {
	Name  string
	Value int
}

// The limits the fleet is checked against.
var (
	limitRoleName       = limit{"IAM role name length", 64}
	limitPolicyName     = limit{"IAM managed policy name length", 128}
	limitTrustPolicy    = limit{"IAM role trust policy length (default quota, whitespace excluded)", 2048}
	limitManagedPolicy  = limit{"IAM managed policy length (whitespace excluded)", iampolicy.MaxManagedPolicySize}
	limitPoliciesOnRole = limit{"IAM managed policies attached to a role (default quota)", 10}
	limitRoles          = limit{"IAM roles per account (default quota)", 1000}
	limitPolicies       = limit{"IAM customer managed policies per account (default quota)", 1500}
	limitOIDCProviders  = limit{"IAM OIDC identity providers per account (default quota)", 100}
)

// clusterIAM is what one stack of the root program creates in its account
// against the per-account quotas, besides what deploy/ creates for it: its
// roles (with pulumi-eks's service role), its customer managed policies,
// and pulumi-eks's OIDC provider for IRSA. The root project's
// TestIAMObjectsPerStackForTheDeployFleet writes the numbers to
// ../testdata/iam-per-stack.golden.json, and a test here holds these to
// them.
var clusterIAM = struct{ Roles, Policies, OIDCProviders int }{Roles: 6, Policies: 2, OIDCProviders: 1}

// usage is what the configuration creates against each limit: the largest
// object of each kind, and the counts per account, with the role or
// account that has them.
type usage struct {
	Value int
	Where string
}

// fleetUsage computes the fleet's usage of every limit, without
// registering anything: the documents and names are the ones the program
// registers (the longest partition's ARNs, so the sizes hold anywhere).
func fleetUsage(c *Config) (map[limit]usage, []error) {
	const partition = "aws-us-gov"
	used := map[limit]usage{}
	most := func(l limit, v int, where string) {
		if u, ok := used[l]; !ok || v > u.Value {
			used[l] = usage{v, where}
		}
	}
	var errs []error
	roles, policies, oidc := map[string]int{}, map[string]int{}, map[string]int{}
	for _, acct := range sortedKeys(c.Accounts) {
		if c.Accounts[acct].OidcProviderArn == "" {
			oidc[acct]++ // Pulumi Cloud's
		}
	}
	for _, r := range Roles(c) {
		acct := c.Accounts[r.Account]
		role := deployRoleName + r.Key
		most(limitRoleName, len(names.Autoname(role)), role)
		roles[r.Account]++
		// The cluster's own. The review stacks count as one: each open pull
		// request's review stack adds as much again.
		roles[r.Account] += clusterIAM.Roles
		policies[r.Account] += clusterIAM.Policies
		oidc[r.Account] += clusterIAM.OIDCProviders
		providerArn := fmt.Sprintf("arn:%s:iam::%s:oidc-provider/%s", partition, acct.ID, oidcIssuerKey)
		trust, err := TrustPolicy(c, r, providerArn)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		doc, err := iampolicy.Parse(trust)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		most(limitTrustPolicy, doc.Size(), role)

		boundary := WorkloadBoundary(r.scope(c, partition))
		most(limitManagedPolicy, boundary.Size(), BoundaryName(c, r.BoundaryKey))
		most(limitPolicyName, len(BoundaryName(c, r.BoundaryKey)), BoundaryName(c, r.BoundaryKey))
		policies[r.Account]++

		attached := len(acct.DeployPolicyArns)
		if attached == 0 {
			parts, err := iampolicy.Split(DeployerPolicy(r.scope(c, partition)), iampolicy.MaxManagedPolicySize)
			if err != nil {
				errs = append(errs, fmt.Errorf("the deployer policy of %s: %w", role, err))
				continue
			}
			attached = len(parts)
			policies[r.Account] += len(parts)
			most(limitPolicyName, len(names.Autoname(deployerPolicyName(r, len(parts)))), role)
			for _, p := range parts {
				most(limitManagedPolicy, p.Size(), role)
			}
		}
		most(limitPoliciesOnRole, attached, role)
	}
	for _, acct := range sortedKeys(roles) {
		most(limitRoles, roles[acct], "account "+acct)
	}
	for _, acct := range sortedKeys(policies) {
		most(limitPolicies, policies[acct], "account "+acct)
	}
	for _, acct := range sortedKeys(oidc) {
		most(limitOIDCProviders, oidc[acct], "account "+acct)
	}
	return used, errs
}

// checkLimits refuses a fleet that would break an IAM limit, naming the
// limit, where it breaks and what to change.
func checkLimits(c *Config) []error {
	used, errs := fleetUsage(c)
	over := make([]limit, 0, len(used))
	for l, u := range used {
		if u.Value > l.Value {
			over = append(over, l)
		}
	}
	sort.Slice(over, func(i, j int) bool { return over[i].Name < over[j].Name })
	for _, l := range over {
		u := used[l]
		fix := "shorten the stack's name"
		switch l {
		case limitTrustPolicy, limitManagedPolicy, limitPoliciesOnRole:
			fix = "shorten its cluster name or stack name"
		case limitRoles, limitPolicies:
			fix = "move some of its stacks to another account (the check counts what deploy/ creates against IAM's default quota)"
		}
		errs = append(errs, fmt.Errorf("stacks: %s would reach %d, over the limit of %d (%s): %s",
			u.Where, u.Value, l.Value, l.Name, fix))
	}
	return errs
}

// Deployments per push: a push that touches the program deploys every
// stack (path filters), and the organization runs only so many
// deployments at once, "determined by SKU" (Pulumi's deployment-queue
// page); the rest wait in the queue, up to 7 days. Pulumi's pricing data
// gives 1 concurrent update on Free and 5 on Essentials, unlimited above
// (data/pulumi_pricing.yaml, concurrent-stack-updates). Pulumi Cloud's
// own number (GET /api/orgs/{org}/deployments/metadata, concurrency) wins
// where the check can read it.
var editionConcurrency = map[Edition]int{Free: 1, Essentials: 5}

// updateMinutes is how long one stack's `pulumi up` of a program change
// takes on a Pulumi-hosted runner: a cold build (about 5.5 minutes on 2
// vCPU, no cache on production) and an update of a running cluster's
// add-ons and charts, a few minutes more; a new cluster takes about 25.
const updateMinutes = 10

// pushDrain is how long the deployments one push to the program starts
// take to run, with concurrency at once (0: unlimited), and how many
// waves that is.
func pushDrain(stacks, concurrency int) (waves int, minutes int) {
	if concurrency <= 0 || stacks <= concurrency {
		return 1, updateMinutes
	}
	waves = (stacks + concurrency - 1) / concurrency
	return waves, waves * updateMinutes
}

// concurrencyWarning says, when the fleet is larger than what runs at
// once, how long a push to the program takes to reach every stack.
func concurrencyWarning(c *Config, concurrency int, source string) string {
	waves, minutes := pushDrain(len(c.Stacks), concurrency)
	if waves <= 1 {
		return ""
	}
	return fmt.Sprintf("the organization runs %d deployment(s) at once (%s), so a push that touches the program queues the %d stacks "+
		"in %d waves: about %d minutes until the last stack is updated, more when a stack's cluster is new. Split the fleet's pushes "+
		"(path filters per stack file), or a higher edition runs more at once", concurrency, source, len(c.Stacks), waves, minutes)
}
