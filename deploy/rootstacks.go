package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"nodeless-eks/internal/names"
	"nodeless-eks/internal/stackfile"
	"nodeless-eks/versions"

	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
)

// rootStack is a root stack file deploy/ deploys, as the Pulumi CLI would
// hand it to the root program, and what deploy/ checks in its account.
type rootStack struct {
	// Name is the stack's; File its stack file.
	Name, File string
	// Role is the deploy role its runs assume.
	Role deployRole
	// VpcName is the VPC the file names, which must exist in the role's
	// account and region.
	VpcName string
}

// hostedRunnerCidr is the only range that admits Pulumi-hosted runners:
// they have no fixed egress address (Pulumi publishes none), so a public
// endpoint they can reach is open to all.
const hostedRunnerCidr = "0.0.0.0/0"

// checkRootStacks reads the root project's stack file of every stack
// deploy/ deploys, and of the review template, as the Pulumi CLI reads it,
// and holds each to what its deploy role allows and what its runners can
// reach, before anything is registered: a file that does not exist, that
// the CLI would refuse, or whose clusterName, production, region or
// boundary differ from deploy/'s entry fails here in seconds, where a
// Deployments run would build for minutes and fail with an AccessDenied
// that does not say why. Each problem names the file, the key and the
// fix.
func checkRootStacks(c *Config, partition string) ([]rootStack, error) {
	projectFile := filepath.Join(c.RootProjectDir, "Pulumi.yaml")
	proj, err := workspace.LoadProject(projectFile)
	if err != nil {
		return nil, fmt.Errorf("rootProjectDir %q: reading the root project %s: %w", c.RootProjectDir, projectFile, err)
	}
	if string(proj.Name) != c.Project {
		return nil, fmt.Errorf("project %q: the root project in %s is named %q; set project to its name", c.Project, projectFile, proj.Name)
	}
	names := sortedKeys(c.Stacks)
	if c.ReviewStacks {
		names = append(names, c.ReviewTemplate)
	}
	var stacks []rootStack
	var errs []error
	for _, name := range names {
		rs, problems := checkRootStack(c, projectFile, name, partition)
		errs = append(errs, problems...)
		if len(problems) == 0 {
			stacks = append(stacks, rs)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("the root stack files do not match this fleet:\n%w", err)
	}
	return stacks, nil
}

// checkRootStack checks one stack file.
func checkRootStack(c *Config, projectFile, name, partition string) (rootStack, []error) {
	r := RoleOf(c, name)
	template := name == c.ReviewTemplate && r.Key == reviewRoleKey
	file := filepath.Join(filepath.Dir(projectFile), "Pulumi."+name+".yaml")
	rs := rootStack{Name: name, File: file, Role: r}
	entry := "stacks." + name
	if template {
		entry = "reviewTemplateStack " + name
	}
	if _, err := os.Stat(file); err != nil {
		return rs, []error{fmt.Errorf("%s: %s does not exist; create it, commit it and push it before its first deployment, "+
			"with at least:\n%s", entry, file, RootStackFile(c, name, partition))}
	}
	cfg, err := stackfile.Load(projectFile, file)
	if err != nil {
		return rs, []error{fmt.Errorf("%s: the Pulumi CLI would refuse %s, so every run of the stack would fail at its start: %w", entry, file, err)}
	}
	key := func(k string) string { return cfg[c.Project+":"+k] }
	var errs []error
	bad := func(k, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: %s, %s: %s", entry, file, k, fmt.Sprintf(format, a...)))
	}
	boundary := BoundaryArn(c, partition, c.Accounts[r.Account].ID, r.BoundaryKey)
	if got := key("iamPermissionsBoundary"); got != boundary {
		bad(c.Project+":iamPermissionsBoundary", "is %q; set it to %s: its deploy role creates only roles that carry that boundary", got, boundary)
	}
	if got := cfg["aws:region"]; got != r.Region {
		bad("aws:region", "is %q; set it to %s, the region its deploy role reaches (or change the entry's region)", got, r.Region)
	}
	cluster := key("clusterName")
	if cluster == "" {
		cluster = names.DefaultClusterName(c.Project, name)
	}
	switch {
	case template && !strings.HasPrefix(names.DefaultClusterName(c.Project, c.ReviewStackPrefix+"1"), c.ReviewClusterNamePrefix) && key("clusterName") == "":
		bad(c.Project+":clusterName", "is unset, so a review stack's cluster is named after its stack (%q...), outside reviewClusterNamePrefix %q: set "+
			"reviewClusterNamePrefix to %q, or leave it at its default", names.DefaultClusterName(c.Project, c.ReviewStackPrefix), c.ReviewClusterNamePrefix,
			c.Project+"-"+c.ReviewStackPrefix)
	case template && key("clusterName") != "":
		bad(c.Project+":clusterName", "is %q; leave it unset in the template, so that each review stack's cluster is named after its stack "+
			"(\"%s-<stack>\"): a fixed name would collide between review stacks", key("clusterName"), c.Project)
	case !template && cluster != r.Cluster:
		bad(c.Project+":clusterName", "is %q (the cluster it would create); deploy/'s entry says %q, and its deploy role may touch only that "+
			"cluster's resources: set clusterName: %s in the file, or the entry's clusterName to %q if the file is right. A stack file copied "+
			"from another keeps that stack's clusterName", cluster, r.Cluster, r.Cluster, cluster)
	}
	production := !template && c.Stacks[name].Production
	if got := key("production") == "true"; got != production {
		bad(c.Project+":production", "is %t; deploy/'s entry says production: %t. Set the same in both: deploy/'s decides the role's "+
			"trust and the account, the file's the cluster's protection and pins", got, production)
	}
	if template || c.Stacks[name].AgentPoolID == "" {
		errs = append(errs, checkHostedRunnerReach(entry, file, c.Project, cfg, production)...)
	}
	rs.VpcName = key("vpcName")
	return rs, errs
}

// checkHostedRunnerReach holds a stack run on Pulumi-hosted runners to an
// API endpoint they can reach: the public one, open to hostedRunnerCidr (a
// production stack then needs allowPublicEndpointFromInternet, which the
// root program requires for it).
func checkHostedRunnerReach(entry, file, project string, cfg map[string]string, production bool) []error {
	var cidrs []string
	_ = json.Unmarshal([]byte(cfg[project+":publicAccessCidrs"]), &cidrs)
	why := "Pulumi-hosted runners, which have no fixed egress address, reach the Kubernetes API only through a public endpoint open " +
		"to " + hostedRunnerCidr
	alternative := "or run the stack on a customer-managed runner pool in your network (the entry's agentPoolId, Enterprise edition)"
	var errs []error
	switch {
	case cfg[project+":endpointPublicAccess"] == "false":
		errs = append(errs, fmt.Errorf("%s: %s, %s:endpointPublicAccess: is false; %s: set it to true, %s", entry, file, project, why, alternative))
	case !slices.Contains(cidrs, hostedRunnerCidr):
		errs = append(errs, fmt.Errorf("%s: %s, %s:publicAccessCidrs: is %s; %s: add %q, %s", entry, file, project,
			cfg[project+":publicAccessCidrs"], why, hostedRunnerCidr, alternative))
	case production && cfg[project+":allowPublicEndpointFromInternet"] != "true":
		errs = append(errs, fmt.Errorf("%s: %s, %s:allowPublicEndpointFromInternet: is not true, and the root program refuses a production "+
			"stack whose endpoint is open to %s without it; %s: set it to true (access still needs an EKS access entry), %s",
			entry, file, project, hostedRunnerCidr, why, alternative))
	}
	return errs
}

// RootStackFile is what a root stack file of the fleet must hold for
// deploy/ to deploy it: the keys deploy/ checks, with its values, and the
// VPC keys the root program requires, to be filled in (examples/vpc's
// rootStackConfig output gives them).
func RootStackFile(c *Config, name, partition string) string {
	r := RoleOf(c, name)
	template := name == c.ReviewTemplate && r.Key == reviewRoleKey
	p := c.Project + ":"
	var b strings.Builder
	fmt.Fprintf(&b, "config:\n  aws:region: %s\n", r.Region)
	fmt.Fprintf(&b, "  %siamPermissionsBoundary: %s\n", p, BoundaryArn(c, partition, c.Accounts[r.Account].ID, r.BoundaryKey))
	if !template {
		fmt.Fprintf(&b, "  %sclusterName: %s\n", p, r.Cluster)
	}
	fmt.Fprintf(&b, "  %svpcName: <the VPC's Name tag>                # examples/vpc's rootStackConfig output\n", p)
	fmt.Fprintf(&b, "  %sprivateSubnetNamePattern: <vpcName>-private-*\n", p)
	fmt.Fprintf(&b, "  %spodSubnetNamePattern: <vpcName>-podsubnet-*\n", p)
	production := !template && c.Stacks[name].Production
	if production {
		// What the root program requires of a production stack: the
		// upgrade policy chosen, and a Bottlerocket release pinned.
		fmt.Fprintf(&b, "  %sproduction: true\n", p)
		fmt.Fprintf(&b, "  %ssupportType: STANDARD\n", p)
		fmt.Fprintf(&b, "  %snodeClasses:\n    default:\n      amiAlias: bottlerocket@v%s\n", p, versions.SuggestedBottlerocket)
	}
	if template || c.Stacks[name].AgentPoolID == "" {
		fmt.Fprintf(&b, "  %spublicAccessCidrs: [\"%s\"]                 # Pulumi-hosted runners have no fixed address\n", p, hostedRunnerCidr)
		if production {
			fmt.Fprintf(&b, "  %sallowPublicEndpointFromInternet: true\n", p)
		}
	}
	return b.String()
}
