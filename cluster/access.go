package cluster

import (
	"fmt"
	"maps"
	"slices"

	"nodeless-eks/internal/awsaccount"

	awseks "github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// AccessEntry grants one IAM principal access to the cluster through an
// EKS access policy, on the whole cluster or on some namespaces.
type AccessEntry struct {
	// PrincipalArn is an IAM role or user ARN (a role ARN may carry a path;
	// an STS assumed-role session ARN is not a principal EKS accepts).
	PrincipalArn string `json:"principalArn" pulumi:"principalArn"`
	// Policy is a key of AccessPolicies.
	Policy string `json:"policy" pulumi:"policy"`
	// Namespaces limits the policy to these namespaces; empty means the
	// whole cluster. cluster-admin is always cluster-wide.
	Namespaces []string `json:"namespaces,omitempty" pulumi:"namespaces,optional"`
}

// AccessPolicies are the EKS access policies an entry may name, by the
// short name the stack configuration uses.
var AccessPolicies = map[string]string{
	"cluster-admin": "AmazonEKSClusterAdminPolicy",
	"admin":         "AmazonEKSAdminPolicy",
	"edit":          "AmazonEKSEditPolicy",
	"view":          "AmazonEKSViewPolicy",
}

// newAccessEntries creates one STANDARD access entry per configured entry
// and associates its access policy, and returns both. They wait for the
// cluster only; nothing in the bootstrap waits for them.
func newAccessEntries(ctx *pulumi.Context, name string, args *Args, account awsaccount.Account,
	clusterName pulumi.StringOutput, parent pulumi.ResourceOption) ([]pulumi.Resource, error) {
	var created []pulumi.Resource
	for _, entryName := range slices.Sorted(maps.Keys(args.AccessEntries)) {
		e := args.AccessEntries[entryName]
		entry, err := awseks.NewAccessEntry(ctx, name+"-access-"+entryName, &awseks.AccessEntryArgs{
			ClusterName:  clusterName,
			PrincipalArn: pulumi.String(e.PrincipalArn),
			Type:         pulumi.String("STANDARD"),
			Tags:         pulumi.ToStringMap(args.Tags),
		}, parent)
		if err != nil {
			return nil, fmt.Errorf("creating access entry %s: %w", entryName, err)
		}
		scope := awseks.AccessPolicyAssociationAccessScopeArgs{Type: pulumi.String("cluster")}
		if len(e.Namespaces) > 0 {
			scope = awseks.AccessPolicyAssociationAccessScopeArgs{
				Type:       pulumi.String("namespace"),
				Namespaces: pulumi.ToStringArray(e.Namespaces),
			}
		}
		association, err := awseks.NewAccessPolicyAssociation(ctx, name+"-access-"+entryName, &awseks.AccessPolicyAssociationArgs{
			ClusterName: clusterName,
			// The entry's output, so that the association waits for it.
			PrincipalArn: entry.PrincipalArn,
			PolicyArn:    pulumi.Sprintf("arn:%s:eks::aws:cluster-access-policy/%s", account.Partition, AccessPolicies[e.Policy]),
			AccessScope:  scope,
		}, parent)
		if err != nil {
			return nil, fmt.Errorf("associating %s with access entry %s: %w", e.Policy, entryName, err)
		}
		created = append(created, entry, association)
	}
	return created, nil
}
