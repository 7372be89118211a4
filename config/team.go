package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"nodeless-eks/cluster"
)

var (
	// IAM principals EKS accepts in an access entry: roles (with or
	// without a path) and users, not STS sessions.
	principalArnRe = regexp.MustCompile(`^arn:aws(-cn|-us-gov)?:iam::\d{12}:(role|user)/[\w+=,.@/-]+$`)
	policyArnRe    = regexp.MustCompile(`^arn:aws(-cn|-us-gov)?:iam::(\d{12}|aws):policy/[\w+=,.@/-]+$`)
	kmsKeyArnRe    = regexp.MustCompile(`^arn:aws(-cn|-us-gov)?:kms:[a-z0-9-]+:\d{12}:key/[0-9a-f-]+$`)
	iamPathRe      = regexp.MustCompile(`^/([\x21-\x7e]+/)?$`)
	// Kubernetes namespace names (RFC 1123 labels).
	namespaceRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	entryNameRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$`)
)

// Control-plane log types EKS knows, and the retentions CloudWatch accepts.
var (
	clusterLogTypes  = []string{"api", "audit", "authenticator", "controllerManager", "scheduler"}
	logRetentionDays = []int{1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653}
)

// checkAccessEntries: who else may use the cluster, as EKS accepts it.
func (c *Config) checkAccessEntries(p *problems) {
	principals := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(c.AccessEntries)) {
		e := c.AccessEntries[name]
		key := "accessEntries." + name
		if !entryNameRe.MatchString(name) {
			p.add("accessEntries %q: want an entry name of 1-40 lower-case letters, digits and '-'", name)
		}
		switch {
		case strings.HasPrefix(e.PrincipalArn, "arn:aws:sts:") || strings.Contains(e.PrincipalArn, ":assumed-role/"):
			p.add("%s.principalArn %q: an STS session is not a principal EKS accepts; use the role's ARN, arn:aws:iam::<account>:role/<name>", key, e.PrincipalArn)
		case !principalArnRe.MatchString(e.PrincipalArn):
			p.add("%s.principalArn %q: want an IAM role or user ARN such as \"arn:aws:iam::111122223333:role/platform-admins\"", key, e.PrincipalArn)
		case principals[e.PrincipalArn] != "":
			p.add("%s.principalArn %q: already granted by accessEntries.%s; EKS allows one entry per principal", key, e.PrincipalArn, principals[e.PrincipalArn])
		default:
			principals[e.PrincipalArn] = name
		}
		if _, ok := cluster.AccessPolicies[e.Policy]; !ok {
			p.add("%s.policy %q: want one of %s", key, e.Policy, strings.Join(slices.Sorted(maps.Keys(cluster.AccessPolicies)), ", "))
		}
		if e.Policy == "cluster-admin" && len(e.Namespaces) > 0 {
			p.add("%s.namespaces: cluster-admin is cluster-wide; use admin or edit to limit a principal to namespaces", key)
		}
		for i, ns := range e.Namespaces {
			if !namespaceRe.MatchString(ns) {
				p.add("%s.namespaces[%d] %q: want a Kubernetes namespace name", key, i, ns)
			}
		}
	}
}

// checkLogging: control-plane log types and a retention CloudWatch offers.
func (c *Config) checkLogging(p *problems) {
	for i, t := range c.ClusterLogTypes {
		if !slices.Contains(clusterLogTypes, t) {
			p.add("clusterLogTypes[%d] %q: want some of %s", i, t, strings.Join(clusterLogTypes, ", "))
		}
	}
	if !slices.Contains(logRetentionDays, c.LogRetentionDays) {
		p.add("logRetentionDays %d: want a retention CloudWatch accepts: %s", c.LogRetentionDays, strings.Trim(fmt.Sprint(logRetentionDays), "[]"))
	}
}

// checkEncryption: a Secrets key EKS can use.
func (c *Config) checkEncryption(p *problems) {
	if c.KmsKeyArn != "" && !kmsKeyArnRe.MatchString(c.KmsKeyArn) {
		p.add("kmsKeyArn %q: want a KMS key ARN such as \"arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab\" (not an alias), or leave it unset to create a key", c.KmsKeyArn)
	} else if c.KmsKeyArn != "" && !strings.Contains(c.KmsKeyArn, ":kms:"+c.Region+":") {
		p.add("kmsKeyArn %q: EKS needs a key in the cluster's region %s", c.KmsKeyArn, c.Region)
	}
}

// checkIAM: the path and boundary every role and policy gets.
func (c *Config) checkIAM(p *problems) {
	if !iamPathRe.MatchString(c.IAM.Path) || len(c.IAM.Path) > 512 {
		p.add("iamPath %q: want \"/\" or a path that starts and ends with '/', such as \"/eks/\"", c.IAM.Path)
	}
	if c.IAM.PermissionsBoundary != "" && !policyArnRe.MatchString(c.IAM.PermissionsBoundary) {
		p.add("iamPermissionsBoundary %q: want a managed policy ARN such as \"arn:aws:iam::111122223333:policy/boundary\"", c.IAM.PermissionsBoundary)
	}
}
