package main

import (
	"fmt"
	"strconv"
	"strings"

	"nodeless-eks/versions"
)

// What every deployment's settings give its run: the variables, the pre-run
// commands, the paths that trigger it and the dependency cache.

// GitHubTokenWithheld replaces Pulumi's GitHub App token in every run.
// Deployments otherwise gives each run a token of Pulumi's GitHub App
// installation, "not limited to the source repository" and with "write
// access to repository contents" (Pulumi's GitHub App page, "GitHub token
// in deployments"): a review stack's run of a pull request's code could
// push to the branch production deploys from. "An explicit value always
// overrides the one Pulumi provides" (the same page), so every stack's
// settings set this value, which is no credential, and the first pre-run
// command stops a run whose token is anything else.
const GitHubTokenWithheld = "withheld-by-nodeless-eks-deploy"

// GitHubTokenVariables are where Deployments puts that token: GITHUB_TOKEN,
// and on GitHub Enterprise Server GITHUB_ENTERPRISE_TOKEN and
// GH_ENTERPRISE_TOKEN too (the same page).
var GitHubTokenVariables = []string{"GITHUB_TOKEN", "GITHUB_ENTERPRISE_TOKEN", "GH_ENTERPRISE_TOKEN"}

// EnvironmentVariables are the variables every deployment's settings set.
func EnvironmentVariables() map[string]any {
	env := map[string]any{}
	for _, v := range GitHubTokenVariables {
		env[v] = GitHubTokenWithheld
	}
	return env
}

// CachesDependencies reports whether a stack's deployments use Deployments'
// dependency cache. The cache is the project's ("Caches are shared on the
// project level", Pulumi's Deployments FAQ) and holds, for Go, the module
// and build caches and ~/.pulumi/plugins: a review stack's run of a pull
// request's code could write a poisoned build that every other stack
// restores. So while the fleet has review stacks nothing caches, and
// production, on its own, never does.
func CachesDependencies(c *Config, stack string) bool {
	s, named := c.Stacks[stack]
	return named && c.Review == nil && !s.Production && s.AgentPoolID == ""
}

// PathFilters deploy a stack when the root program or the stack's own file
// changes, not for another stack's file, docs, tests or deploy/ itself.
func PathFilters(repoDir, stack string) []any {
	prefix := strings.TrimSuffix(strings.TrimPrefix(repoDir, "./"), "/") + "/"
	if prefix == "./" || prefix == "/" {
		prefix = ""
	}
	var paths []any
	for _, p := range []string{"**/*.go", "go.mod", "go.sum", "Pulumi.yaml", "Pulumi." + stack + ".yaml",
		"!deploy/**", "!test/**", "!**/*_test.go", "!testdata/**", "!testkit/**", "!docs/**"} {
		if neg, ok := strings.CutPrefix(p, "!"); ok {
			paths = append(paths, "!"+prefix+neg)
		} else {
			paths = append(paths, prefix+p)
		}
	}
	return paths
}

// PreRunCommands stop a run, before the repository's code runs, that holds
// a GitHub token deploy/ did not give it or whose runner lacks what the
// root program needs; then they set the keys its deploy role decides and
// resolve what an interrupted run left in the state. Each runs
// in a shell of its own.
func PreRunCommands(c *Config, boundaryArn string, r deployRole) []any {
	return []any{
		GitHubTokenCheckCommand(),
		`command -v go >/dev/null || { echo "nodeless-eks: the runner image has no Go toolchain; use an image with Go 1.26" >&2; exit 1; }`,
		`command -v aws >/dev/null || { echo "nodeless-eks: the runner image has no AWS CLI; the cluster's kubeconfig runs aws eks get-token" >&2; exit 1; }`,
		StackConfigCommand(c, boundaryArn, r),
		RecoveryCommand(c.RepoDir),
	}
}

// GitHubTokenCheckCommand stops a run whose GitHub token variables are not
// what its settings give them: settings rewritten outside deploy/, or a
// Deployments that no longer lets them override its own.
func GitHubTokenCheckCommand() string {
	var checks []string
	for _, v := range GitHubTokenVariables {
		checks = append(checks, fmt.Sprintf(`[ "${%s-%s}" = %q ]`, v, GitHubTokenWithheld, GitHubTokenWithheld))
	}
	return fmt.Sprintf(`{ %s; } || { echo "nodeless-eks: this run holds in %s a token that deploy/ did not give it `+
		`(Pulumi's GitHub App token, which can push to the repository), so none of the repository's code runs; deploy/'s next run `+
		`restores the stack's settings" >&2; exit 1; }`, strings.Join(checks, " && "), strings.Join(GitHubTokenVariables, " or "))
}

// StackConfigCommand declares, in the run's checkout, the keys its deploy
// role decides: the permissions boundary (iamPermissionsBoundary), region
// (aws:region), cluster (clusterName) and production. Whatever the stack
// file says, the run carries out what its role allows, where a file
// copied from another stack would build for minutes and then fail with an
// AccessDenied that does not say why. A review stack's cluster is the
// review cluster prefix and what follows the stack prefix in its name
// ("nodeless-eks-pr-7" for pr-7 with the defaults, what an unset
// clusterName gives it). `pulumi config set` writes Pulumi.<stack>.yaml in
// the project's directory, which the operation then reads: pulumiservice's
// own Deployments "apply config as part of precommands" so
// (provider/pkg/provider/deployment.go), and pulumi/pulumi's remote
// workspace test reads back a value a pre-run set. A stack whose config
// lives in Pulumi Cloud takes no such `config set`: remote stack config
// refuses it ("config set not supported for remote stack config"), and an
// ESC environment the stack manages is written instead (pulumi/pulumi
// v3.276.0 pkg/cmd/pulumi/config, config.go and config_writer.go), which
// the run's identity holds no grant for (RunScopes): its run stops here,
// with the CLI's error. Neither is tested: a file backend has no such
// stacks.
func StackConfigCommand(c *Config, boundaryArn string, r deployRole) string {
	cluster, production := r.Cluster, "false"
	if r.Stack == "" {
		cluster = r.ClusterPrefix + "${PULUMI_CI_STACK#" + r.ReviewStackPrefix + "}"
	} else {
		production = strconv.FormatBool(c.Stacks[r.Stack].Production)
	}
	p := c.Project + ":"
	var sets []string
	for _, kv := range [][2]string{{p + "iamPermissionsBoundary", boundaryArn}, {"aws:region", r.Region}, {p + "clusterName", cluster},
		{p + "production", production}} {
		sets = append(sets, fmt.Sprintf(`pulumi config set --stack "$s" %s "%s"`, kv[0], kv[1]))
	}
	return fmt.Sprintf(`cd "$(git rev-parse --show-toplevel)"/%q && s="$PULUMI_CI_ORGANIZATION/$PULUMI_CI_PROJECT/$PULUMI_CI_STACK" && %s || `+
		`{ echo "nodeless-eks: could not set the keys that stack $PULUMI_CI_STACK's deploy role decides (the error is above)" >&2; exit 1; }`,
		c.RepoDir, strings.Join(sets, " && "))
}

// RecoveryCommand resolves, before an update, destroy, refresh or drift
// remediation, what a run that died left in the stack's state
// (cmd/recover-pending), and stops the run with a report when it cannot
// decide. A run that was not interrupted pays one `pulumi stack export` and
// a substring test: the Go command is built only when the state holds
// "pending_operations", which a state without any omits
// (apitype.DeploymentV3, omitempty), or the recovery's mark on an import
// not yet read. Previews and drift detection write no state and skip it.
func RecoveryCommand(repoDir string) string {
	return fmt.Sprintf(`case "$PULUMI_CI_OPERATION" in update|destroy|refresh|remediate-drift) `+
		`cd "$(git rev-parse --show-toplevel)"/%q || exit 1; `+
		`state="$(pulumi stack export --stack "$PULUMI_CI_ORGANIZATION/$PULUMI_CI_PROJECT/$PULUMI_CI_STACK" 2>&1)" || `+
		`{ echo "nodeless-eks: could not read the stack's state to look for what an interrupted run left: $state" >&2; exit 1; }; `+
		`case "$state" in *'"pending_operations"'*|*'%s'*) go run ./cmd/recover-pending || `+
		`{ echo "nodeless-eks: an interrupted run left pending operations that need a person (see the lines above; docs/recovery.md)" >&2; exit 1; };; esac;; esac`,
		repoDir, recoveryMark)
}

// recoveryMark is the start of recovery.Unread, which the pre-run looks
// for; TestRecoveryCommand holds the two together.
const recoveryMark = "nodeless-eks recovery: imported"

// StackFile is Pulumi.<stack>.yaml as the checklist has a team write it
// (deploy/README.md, step 6): what the stack's deploy role can carry out,
// the stack making its own VPC. A production stack adds what the root
// program requires of one: the upgrade policy chosen, and a Bottlerocket
// release pinned. Runs on Pulumi's hosted pool come from no fixed
// address, so the endpoint is open to the internet (the cluster's
// authentication still applies); a customer-managed pool's stacks leave
// the program's default.
func StackFile(c *Config, stack, partition string) string {
	r := RoleOf(c, stack)
	p := c.Project + ":"
	var b strings.Builder
	fmt.Fprintf(&b, "config:\n  aws:region: %s\n", r.Region)
	fmt.Fprintf(&b, "  %siamPermissionsBoundary: %s\n", p, BoundaryArn(c, partition, c.Accounts[r.Account].ID, r.Key))
	production, hosted := false, c.Review != nil && c.Review.AgentPoolID == ""
	if r.Stack != "" {
		fmt.Fprintf(&b, "  %sclusterName: %s\n", p, r.Cluster)
		production, hosted = c.Stacks[stack].Production, c.Stacks[stack].AgentPoolID == ""
	}
	if production {
		fmt.Fprintf(&b, "  %sproduction: true\n", p)
		fmt.Fprintf(&b, "  %ssupportType: STANDARD\n", p)
		fmt.Fprintf(&b, "  %snodeClasses:\n    default:\n      amiAlias: bottlerocket@v%s\n", p, versions.SuggestedBottlerocket)
	}
	if hosted {
		fmt.Fprintf(&b, "  %spublicAccessCidrs: [\"0.0.0.0/0\"]\n", p)
		if production {
			fmt.Fprintf(&b, "  %sallowPublicEndpointFromInternet: true\n", p)
		}
	}
	return b.String()
}
