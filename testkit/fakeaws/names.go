package fakeaws

import (
	"fmt"

	"nodeless-eks/internal/names"
)

// NameLimit is how long a resource type's physical name may be, and which
// input carries it.
type NameLimit struct {
	// Input is the input that names the resource (pulumi-aws autonames it
	// when unset).
	Input string
	// Max is the lower of the AWS API's limit and pulumi-aws's autonaming
	// limit (provider/resources.go).
	Max int
}

// NameLimits are the name limits of the types that the program or pulumi-eks
// names, by Pulumi resource type.
var NameLimits = map[string]NameLimit{
	"aws:iam/role:Role":                       {"name", 64},                // IAM; AutoName("name", 64)
	"aws:cloudwatch/eventRule:EventRule":      {"name", 64},                // EventBridge; AutoName("name", 64)
	"aws:sqs/queue:Queue":                     {"name", 80},                // SQS; AutoName("name", 80)
	"aws:iam/policy:Policy":                   {"name", 128},               // IAM (the bridge allows 255)
	"aws:eks/cluster:Cluster":                 {"name", 100},               // EKS CreateCluster
	"aws:eks/fargateProfile:FargateProfile":   {"fargateProfileName", 100}, // EKS CreateFargateProfile
	"aws:ec2/securityGroup:SecurityGroup":     {"name", 255},               // EC2
	"aws:cloudwatch/logGroup:LogGroup":        {"name", 512},               // CloudWatch Logs
	"aws:iam/instanceProfile:InstanceProfile": {"name", 128},               // IAM
}

// CheckName returns an error when physical is longer than the limit of typ.
// Types without a limit here pass.
func CheckName(typ, physical string) error {
	limit, ok := NameLimits[typ]
	if ok && len(physical) > limit.Max {
		return fmt.Errorf("%s name %q is %d characters; AWS allows %d", typ, physical, len(physical), limit.Max)
	}
	return nil
}

// NamedChild is a child that pulumi-eks creates with a physical name.
type NamedChild struct {
	Type, Name string
}

// PulumiEKSNamedChildren are the children that pulumi-eks v3.9.1 names for
// the options this component passes (nodejs/eks/cluster/cluster.ts and
// servicerole.ts): the EKS cluster, named clusterName, and unless the
// component brings its own service role, the role "<name>-eksRole-role",
// which pulumi-aws autonames. Under mocks pulumi-eks creates nothing, so
// the name checks take its children from here.
func PulumiEKSNamedChildren(name, clusterName string, ownServiceRole bool) []NamedChild {
	children := []NamedChild{{Type: "aws:eks/cluster:Cluster", Name: clusterName}}
	if !ownServiceRole {
		children = append(children, NamedChild{Type: "aws:iam/role:Role", Name: names.Autoname(name + "-eksRole-role")})
	}
	return children
}
