package config

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"nodeless-eks/internal/names"
)

// problems collects what is wrong with a configuration, in order.
type problems []error

func (p *problems) add(format string, a ...any) { *p = append(*p, fmt.Errorf(format, a...)) }

func (p *problems) addErr(err error) {
	if err != nil {
		*p = append(*p, err)
	}
}

// validate runs the checks of every topic (identity here; versions.go,
// network.go, team.go, capacity.go) and joins all problems into one error.
// The order is the order users read them in; the registration golden of
// the root tests pins it, error texts included.
func (c *Config) validate() error {
	var p problems
	for _, check := range []func(*problems){
		c.checkClusterName,
		c.checkKubernetesVersion,
		c.checkSupportType,
		c.checkKarpenterVersion,
		c.checkRegion,
		c.checkVpc,
		c.checkEndpoints,
		c.checkAddonVersions,
		c.checkCoreDNSReplicas,
		c.checkChartVersions,
		c.checkAccessEntries,
		c.checkLogging,
		c.checkEncryption,
		c.checkIAM,
		c.checkProductionEndpoint,
		c.checkControllerResources,
		c.checkNodePools,
		c.checkTags,
	} {
		check(&p)
	}
	return errors.Join(p...)
}

// EKS: letters, digits, '-' and '_', starting with a letter or digit.
var clusterNameRe = regexp.MustCompile(`^[0-9A-Za-z][A-Za-z0-9_-]*$`)

func (c *Config) checkClusterName(p *problems) {
	if !clusterNameRe.MatchString(c.ClusterName) {
		p.add("clusterName %q: want 1-%d letters, digits, '-' or '_', starting with a letter or digit", c.ClusterName, names.MaxClusterNameLength)
	} else if len(c.ClusterName) > names.MaxClusterNameLength {
		p.add("clusterName %q: %d characters, at most %d: every AWS name the stack creates starts with it, and IAM roles and "+
			"EventBridge rules allow 64 characters (\"%s-karpenter-state-change\" plus pulumi's 8-character suffix would be %d)",
			c.ClusterName, len(c.ClusterName), names.MaxClusterNameLength, c.ClusterName,
			len(names.Autoname(c.ClusterName+"-karpenter-state-change")))
	}
}

var regionRe = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-\d$`)

func (c *Config) checkRegion(p *problems) {
	if !regionRe.MatchString(c.Region) {
		p.add("aws:region %q: want an AWS region such as \"eu-west-1\"", c.Region)
	}
}

func (c *Config) checkTags(p *problems) {
	for _, k := range slices.Sorted(maps.Keys(c.Tags)) {
		switch {
		case k == "" || len(k) > 128:
			p.add("tags key %q: want 1-128 characters", k)
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			p.add("tags key %q: the aws: prefix is reserved by AWS", k)
		case k == names.ClusterTagKey || k == names.DiscoveryTagKey:
			p.add("tags key %q: the program sets it to the cluster's name, and deploy/'s roles trust it to tell their clusters' "+
				"resources apart; remove it from tags", k)
		case len(c.Tags[k]) > 256:
			p.add("tags[%q]: value longer than 256 characters", k)
		}
	}
}
