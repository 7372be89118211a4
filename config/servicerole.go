package config

import (
	"fmt"
	"strings"
)

// checkServiceRole holds the configuration to the service role the running
// cluster has. EKS cannot give a cluster another role (UpdateClusterConfig
// takes none, and pulumi-aws replaces a cluster whose roleArn changes:
// aws_eks_cluster role_arn is ForceNew), and IAM cannot move a role to
// another path (UpdateRole takes no path; pulumi-aws replaces a role whose
// path changes), so either change would replace the cluster:
//
//   - the program's own role ("<clusterName>-service-*", every cluster this
//     version creates) is kept; an iamPath other than the role's is refused;
//   - pulumi-eks's role ("<clusterName>-eksRole-role-*", what earlier
//     versions left pulumi-eks to create when no iamPath or boundary was
//     set) is kept too (KeepPulumiEKSServiceRole), and a boundary reaches it
//     through a transform, in place; an iamPath is refused;
//   - any other role is not this stack's cluster: another stack's of the
//     same name, or one made by hand. It is refused, since an update would
//     replace it.
func (c *Config) checkServiceRole(roleArn string) error {
	path, name, ok := rolePathAndName(roleArn)
	if !ok {
		return fmt.Errorf("clusterName %q: EKS says the cluster's service role is %q, which is not an IAM role ARN; "+
			"nothing is changed until it can be read", c.ClusterName, roleArn)
	}
	configured := c.IAM.Path
	if configured == "" {
		configured = "/"
	}
	own := strings.HasPrefix(name, c.ClusterName+"-service-")
	pulumiEKS := strings.HasPrefix(name, c.ClusterName+"-eksRole-role-")
	switch {
	case own && path != configured:
		return fmt.Errorf("iamPath %q: cluster %s's service role %s is at path %q; IAM cannot move a role, so the role would be "+
			"replaced, and EKS replaces a cluster whose service role changes. Set iamPath %q", c.IAM.Path, c.ClusterName, roleArn, path, path)
	case own:
		return nil
	case pulumiEKS && configured != "/":
		return fmt.Errorf("iamPath %q: cluster %s was created with pulumi-eks's service role %s, at path \"/\"; IAM cannot move a "+
			"role, so the role would be replaced, and EKS replaces a cluster whose service role changes. Leave iamPath unset for "+
			"this cluster (iamPermissionsBoundary reaches the role in place; docs/upgrades.md, \"The cluster's service role\")",
			c.IAM.Path, c.ClusterName, roleArn)
	case pulumiEKS:
		c.KeepPulumiEKSServiceRole = true
		return nil
	}
	return fmt.Errorf("clusterName %q: a cluster of that name exists in the account and region with service role %s, which this "+
		"stack does not create (%s-service-*, or pulumi-eks's %s-eksRole-role-* of earlier versions): another stack's cluster, or "+
		"one made by hand. An update would replace it, since EKS cannot change a cluster's role; choose another clusterName",
		c.ClusterName, roleArn, c.ClusterName, c.ClusterName)
}

// rolePathAndName splits a role ARN (arn:<partition>:iam::<account>:role<path><name>)
// into its path ("/" or "/a/b/") and name.
func rolePathAndName(arn string) (path, name string, ok bool) {
	_, rest, found := strings.Cut(arn, ":role/")
	if !found || !strings.HasPrefix(arn, "arn:") || rest == "" || strings.HasSuffix(rest, "/") {
		return "", "", false
	}
	i := strings.LastIndex(rest, "/")
	return "/" + rest[:i+1], rest[i+1:], true
}
