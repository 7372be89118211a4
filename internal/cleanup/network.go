package cleanup

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"nodeless-eks/internal/awscli"
	tagkeys "nodeless-eks/internal/names"
	"nodeless-eks/internal/poll"
)

// The network sweep is the cleanup's second phase, for a VPC the stack
// made: `pulumi destroy` runs it after the EKS cluster, its Fargate
// profile and Karpenter's nodes are gone and before the stack's subnets,
// node security group and VPC go. What those left in the VPC blocks their
// deletion, and pulumi-aws would retry for 15 to 20 minutes and then fail
// without naming it (terraform-provider-aws deletes only Lambda, Comprehend
// and DMS interfaces before a subnet: vpc_network_interface.go,
// deleteLingeringENIs). The VPC is the stack's alone, so what the
// cluster's parts leave in it is the stack's: the VPC CNI's network
// interfaces that no instance holds any more (description "aws-K8S-<instance>",
// amazon-vpc-cni-k8s pkg/awsutils), the LB controller's security groups
// (tag elbv2.k8s.aws/cluster, aws-load-balancer-controller
// pkg/deploy/tracking) and the cluster security group EKS made (tag
// aws:eks:cluster-name, EKS user guide sec-group-reqs.html), which EKS
// sometimes leaves (eksctl-io/eksctl#5135). It deletes those, waits for
// what is still going (EKS's own interfaces, those of load balancers being
// deleted), and fails within its bound naming each interface and group
// left, with the command that removes it, or within stuckSettle once only
// what nothing in the destroy deletes is left. Of another service's, it
// deletes GuardDuty's runtime-monitoring endpoint and group alone, which
// GuardDuty makes in every VPC where it monitors and leaves when the
// cluster goes (terraform-provider-aws #46747; its aws_vpc deletes them
// since #46953); anything else is named, never deleted.
const (
	// EnvPhase selects the phase: "" for the workloads' cleanup,
	// PhaseNetwork for the sweep.
	EnvPhase     = "NODELESS_EKS_CLEANUP_PHASE"
	PhaseNetwork = "network"
	// EnvVpcArn is the VPC the stack made: its "not found" counts only
	// from its account and region.
	EnvVpcArn = "NODELESS_EKS_VPC_ARN"
	// EnvClusterName is the cluster whose parts' leftovers are the stack's.
	EnvClusterName = "NODELESS_EKS_CLUSTER_NAME"
	// EnvNodeSecurityGroup is the stack's own node security group, which
	// Pulumi deletes after the sweep.
	EnvNodeSecurityGroup = "NODELESS_EKS_NODE_SECURITY_GROUP"
	// EnvAWSAccess is the stack's aws provider's credentials, the JSON of
	// an awscli.Access. EnvAWSProfile and EnvAWSRoleArn, its profile and
	// one role, are what the state of an earlier version holds instead.
	EnvAWSAccess  = "NODELESS_EKS_AWS_ACCESS"
	EnvAWSProfile = "NODELESS_EKS_AWS_PROFILE"
	EnvAWSRoleArn = "NODELESS_EKS_AWS_ROLE_ARN"
	// EnvNetworkTimeout bounds the sweep.
	EnvNetworkTimeout = "NODELESS_EKS_NETWORK_TIMEOUT"
	// EnvAuditOnly, "true" for a VPC the stack did not make (EnvVpcArn is
	// then the VPC it names), runs the leftover audit without the sweep.
	// Unset, as in the state of an earlier version, which registered the
	// phase for a VPC the stack made alone, the phase sweeps too.
	EnvAuditOnly = "NODELESS_EKS_AUDIT_ONLY"
)

// NetworkBudget is how long the phase's delete may take: the audit's
// settle, the sweep's bound, and the time `go run` needs to build it.
func NetworkBudget(sweep time.Duration) time.Duration { return auditSettle + sweep + 2*time.Minute }

// networkAWS runs the AWS CLI for the sweep; a variable for tests.
type networkAWS func(ctx context.Context, args ...string) ([]byte, error)

// runNetwork reads the phase's settings, audits what the cluster's
// controllers left in AWS and, in a VPC the stack made, sweeps it.
func runNetwork(ctx context.Context, getenv func(string) string, log io.Writer) error {
	region, account, vpcID, ok := vpcArnParts(getenv(EnvVpcArn))
	if !ok {
		return fmt.Errorf("%s is %q; the program sets it to the ARN of the VPC it made", EnvVpcArn, getenv(EnvVpcArn))
	}
	timeout, err := time.ParseDuration(getenv(EnvNetworkTimeout))
	if err != nil || timeout <= 0 {
		return fmt.Errorf("%s is %q; the program sets it to a duration", EnvNetworkTimeout, getenv(EnvNetworkTimeout))
	}
	cluster := getenv(EnvClusterName)
	if cluster == "" {
		return fmt.Errorf("%s is empty; the program sets it to the cluster's name", EnvClusterName)
	}
	access, err := accessOf(getenv)
	if err != nil {
		return err
	}
	c := eksCluster{Region: region, Access: access}
	ctx, cancel := context.WithTimeout(ctx, auditSettle+timeout+time.Minute)
	defer cancel()
	creds, err := c.session(ctx)
	if err != nil {
		return err
	}
	aws := func(ctx context.Context, args ...string) ([]byte, error) { return c.aws(ctx, creds, args...) }
	callerAccount, callerArn, err := awscli.CallerIdentity(ctx, c.aws, creds)
	if err != nil {
		return err
	}
	if callerAccount != account {
		// From another account every VPC is "not found" and nothing is ours.
		return fmt.Errorf("the credentials are for account %s (%s, reached with %s), and VPC %s is in account %s: run `pulumi destroy` "+
			"with the stack's own credentials (its aws:profile or aws:assumeRole)", callerAccount, callerArn, access, vpcID, account)
	}
	// The audit first: a load balancer left over would hold its network
	// interfaces, which the sweep would wait for until its bound.
	if err := Audit(ctx, aws, AuditArgs{ClusterName: cluster, Region: region, Settle: auditSettle, Interval: interval, Log: log}); err != nil {
		return err
	}
	if getenv(EnvAuditOnly) == "true" {
		return nil
	}
	return Sweep(ctx, aws, Network{VpcID: vpcID, Region: region, ClusterName: cluster, Keep: []string{getenv(EnvNodeSecurityGroup)},
		Timeout: timeout, Interval: interval, ReportEvery: reportEvery, Log: log})
}

// accessOf reads the stack's credentials, or those an earlier version's
// state recorded.
func accessOf(getenv func(string) string) (awscli.Access, error) {
	var a awscli.Access
	if raw := getenv(EnvAWSAccess); raw != "" {
		if err := json.Unmarshal([]byte(raw), &a); err != nil {
			return a, fmt.Errorf("%s is not what the program writes: %w", EnvAWSAccess, err)
		}
		return a, nil
	}
	a.Profile = getenv(EnvAWSProfile)
	if role := getenv(EnvAWSRoleArn); role != "" {
		a.Role = &awscli.Role{RoleArn: role}
	}
	return a, nil
}

// vpcArnParts are the region, account and ID of arn:<partition>:ec2:<region>:<account>:vpc/<id>.
func vpcArnParts(arn string) (region, account, id string, ok bool) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "ec2" || !strings.HasPrefix(parts[5], "vpc/") {
		return "", "", "", false
	}
	return parts[3], parts[4], strings.TrimPrefix(parts[5], "vpc/"), parts[3] != "" && parts[4] != ""
}

// Network is the VPC the sweep clears and its bounds.
type Network struct {
	VpcID, Region, ClusterName string
	// Keep are security groups the stack deletes itself (its node group).
	Keep []string
	// Timeout bounds the sweep; Interval and ReportEvery pace it. Once
	// only what nothing in the destroy deletes is left, the sweep fails
	// after stuckSettle rather than at Timeout.
	Timeout, Interval, ReportEvery time.Duration
	Log                            io.Writer
	// Now and Sleep are the clock; time.Now and poll.Sleep when nil.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// clusterTagKey is the tag the program puts on every resource of a VPC it
// makes (cluster/ownvpc.go) and on what its node classes and add-ons make.
const clusterTagKey = tagkeys.ClusterTagKey

// eni and securityGroup are what the sweep reads of each.
type eni struct {
	NetworkInterfaceId, Status, Description, InterfaceType, RequesterId string
	TagSet                                                              []tag
}

type securityGroup struct {
	GroupId, GroupName string
	Tags               []tag
}

type securityGroupRule struct {
	SecurityGroupRuleId, GroupId string
	IsEgress                     bool
	ReferencedGroupInfo          struct{ GroupId string }
}

type tag struct{ Key, Value string }

func tagOf(tags []tag, key string) string {
	for _, t := range tags {
		if t.Key == key {
			return t.Value
		}
	}
	return ""
}

// Sweep deletes what the cluster's parts left in the VPC and waits, within
// n.Timeout, until nothing but the VPC's default security group and n.Keep
// remain; at the bound it fails, naming what is left. A VPC that is gone
// has nothing left.
func Sweep(ctx context.Context, aws networkAWS, n Network) error {
	now, sleep := n.Now, n.Sleep
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = poll.Sleep
	}
	n.Now = now
	start, reported, stuck := now(), time.Time{}, time.Time{}
	fmt.Fprintf(n.Log, "network sweep of VPC %s (cluster %s), at most %s\n", n.VpcID, n.ClusterName, n.Timeout)
	for {
		left, waits, gone, err := n.sweepOnce(ctx, aws)
		if waits || len(left) == 0 {
			stuck = time.Time{}
		} else if stuck.IsZero() {
			stuck = now()
		}
		switch {
		case err != nil && refusedByIAM(err):
			return fmt.Errorf("sweeping VPC %s: %w; the credentials that run the destroy may not do this, and no wait changes that: "+
				"give them the permission (deploy/'s roles have it) or do it by hand, then run `pulumi destroy` again", n.VpcID, err)
		case err != nil && ctx.Err() == nil && now().Sub(start) < n.Timeout:
			fmt.Fprintf(n.Log, "network sweep: %v; trying again\n", err)
		case err != nil:
			return fmt.Errorf("sweeping VPC %s: %w", n.VpcID, err)
		case gone:
			fmt.Fprintf(n.Log, "network sweep: VPC %s is gone\n", n.VpcID)
			return nil
		case len(left) == 0:
			fmt.Fprintf(n.Log, "network sweep done: VPC %s holds nothing the stack does not delete itself\n", n.VpcID)
			return nil
		case !stuck.IsZero() && now().Sub(stuck) >= stuckSettle:
			return fmt.Errorf("VPC %s holds what blocks its subnets' and its deletion, and nothing in this destroy deletes any of it "+
				"(said with each):\n  %s\nremove each (or what owns it), then run `pulumi destroy` again", n.VpcID, strings.Join(left, "\n  "))
		case now().Sub(start) >= n.Timeout:
			return fmt.Errorf("VPC %s still holds, after %s, what blocks its subnets' and its deletion and is not this stack's to "+
				"delete, or whose delete failed (said with each):\n  %s\nremove each (or what owns it), then run `pulumi destroy` again", n.VpcID, n.Timeout,
				strings.Join(left, "\n  "))
		case now().Sub(reported) >= n.ReportEvery:
			reported = now()
			fmt.Fprintf(n.Log, "network sweep: waiting for %d object(s) to go (%s so far): %s\n", len(left),
				now().Sub(start).Round(time.Second), strings.Join(left, "; "))
		}
		if err := sleep(ctx, n.Interval); err != nil {
			return fmt.Errorf("sweeping VPC %s: %w", n.VpcID, err)
		}
	}
}

// sweepOnce deletes what it may and says what is left, each with the
// command that removes it; waits is true when some of it goes by itself
// (goesByItself), or may once a delete that failed is tried again; gone
// is true when the VPC no longer exists.
func (n Network) sweepOnce(ctx context.Context, aws networkAWS) (left []string, waits, gone bool, err error) {
	vpcFilter := "Name=vpc-id,Values=" + n.VpcID
	if _, err := aws(ctx, "ec2", "describe-vpcs", "--vpc-ids", n.VpcID); err != nil {
		if awscli.IsCode(err, "InvalidVpcID.NotFound") {
			return nil, false, true, nil
		}
		return nil, false, false, err
	}
	// The stack's own NAT gateways are deleted by Pulumi, after the sweep
	// (its deletes run in batches by depth: pulumi/pulumi
	// pkg/resource/deploy step_generator.go ScheduleDeletes): their
	// interfaces are not left over. Told by the tags on the gateway, read
	// here rather than filtered on, since a filter that is ignored (moto
	// ignores tag filters on NAT gateways) would pass another's gateway.
	var nats struct {
		NatGateways []struct {
			State               string
			Tags                []tag
			NatGatewayAddresses []struct{ NetworkInterfaceId string }
		}
	}
	if err := call(ctx, aws, &nats, "ec2", "describe-nat-gateways", "--filter", vpcFilter); err != nil {
		return nil, false, false, err
	}
	ownNAT := map[string]bool{}
	for _, g := range nats.NatGateways {
		if tagOf(g.Tags, clusterTagKey) == n.ClusterName {
			for _, a := range g.NatGatewayAddresses {
				ownNAT[a.NetworkInterfaceId] = true
			}
		}
	}
	guardDuty, err := n.deleteGuardDutysEndpoints(ctx, aws, vpcFilter)
	if err != nil {
		return nil, false, false, err
	}
	var enis struct{ NetworkInterfaces []eni }
	if err := call(ctx, aws, &enis, "ec2", "describe-network-interfaces", "--filters", vpcFilter); err != nil {
		return nil, false, false, err
	}
	for _, e := range enis.NetworkInterfaces {
		if ownNAT[e.NetworkInterfaceId] {
			continue
		}
		if slices.Contains(guardDuty, e.NetworkInterfaceId) {
			waits = true // goes with its endpoint
		}
		cmd := fmt.Sprintf("aws ec2 delete-network-interface --region %s --network-interface-id %s", n.Region, e.NetworkInterfaceId)
		what := fmt.Sprintf("network interface %s (%s, %s", e.NetworkInterfaceId, cmp.Or(e.Description, "no description"), e.Status)
		if e.Status == "available" && strings.HasPrefix(e.Description, "aws-K8S-") {
			// The VPC CNI's, left by a node that is gone.
			del, wait, why, err := n.cniLeftover(ctx, aws, e)
			if err != nil {
				return nil, false, false, err
			}
			if del {
				_, err = aws(ctx, "ec2", "delete-network-interface", "--network-interface-id", e.NetworkInterfaceId)
				switch {
				case err == nil:
					fmt.Fprintf(n.Log, "network sweep: deleted network interface %s (%s), which the VPC CNI left\n", e.NetworkInterfaceId, e.Description)
					continue
				case refusedByIAM(err):
					return nil, false, false, err
				}
				why, wait = "its delete failed: "+firstLine(err), true
			}
			what += ", " + why
			waits = waits || wait
		}
		waits = waits || n.goesByItself(e)
		switch {
		case e.InterfaceType != "" && e.InterfaceType != "interface":
			what += ", " + e.InterfaceType
			cmd = "delete what owns it (" + e.InterfaceType + ")"
		case e.Status != "available":
			cmd = fmt.Sprintf("delete what it is attached to (aws ec2 describe-network-interfaces --region %s --network-interface-ids %s "+
				"names it), or detach it and then %s", n.Region, e.NetworkInterfaceId, cmd)
		}
		left = append(left, what+"): "+cmd)
	}
	var groups struct{ SecurityGroups []securityGroup }
	if err := call(ctx, aws, &groups, "ec2", "describe-security-groups", "--filters", vpcFilter); err != nil {
		return nil, false, false, err
	}
	for _, g := range groups.SecurityGroups {
		if g.GroupName == "default" || slices.Contains(n.Keep, g.GroupId) {
			continue
		}
		cmd := fmt.Sprintf("aws ec2 delete-security-group --region %s --group-id %s", n.Region, g.GroupId)
		what := g.GroupName
		if n.clusters(g) || n.guardDutys(g) {
			held, revoke, err := n.deleteGroup(ctx, aws, g, groups.SecurityGroups)
			switch {
			case err == nil && held == "":
				maker := "cluster " + n.ClusterName + "'s controllers or EKS"
				if n.guardDutys(g) {
					maker = "GuardDuty's runtime monitoring"
				}
				fmt.Fprintf(n.Log, "network sweep: deleted security group %s (%s), which %s left\n", g.GroupId, g.GroupName, maker)
				continue
			case err == nil:
				what, cmd = what+", "+held, "if that group's owner agrees, "+revoke+", then "+cmd
			case refusedByIAM(err):
				return nil, false, false, err
			default:
				// DependencyViolation, while interfaces that use it go.
				what += ", its delete failed: " + firstLine(err)
				waits = true
			}
		}
		left = append(left, fmt.Sprintf("security group %s (%s): %s", g.GroupId, what, cmd))
	}
	return left, waits, false, nil
}

// The VPC CNI's tags on each interface it makes (amazon-vpc-cni-k8s
// pkg/awsutils: eniNodeTagKey, eniCreatedAtTagKey), and the cool-down its
// own leaked-interface cleanup keeps before it deletes one
// (getLeakedENIs, eniDeleteCooldownTime).
const (
	cniInstanceTag  = "node.k8s.amazonaws.com/instance_id"
	cniCreatedAtTag = "node.k8s.amazonaws.com/createdAt"
	cniCooldown     = 5 * time.Minute
)

// cniLeftover decides a detached VPC CNI interface. This cluster's, which
// carries its tag (the add-on's ADDITIONAL_ENI_TAGS, cluster/vpccni.go),
// goes once older than the CNI's cool-down; one without the tag (made
// before this version tagged them) once, too, the instance it was made
// for no longer exists; another cluster's never. wait is true of one that
// will be deletable later; why says why it is not deleted now.
func (n Network) cniLeftover(ctx context.Context, aws networkAWS, e eni) (del, wait bool, why string, err error) {
	created, perr := time.Parse(time.RFC3339, tagOf(e.TagSet, cniCreatedAtTag))
	switch owner := tagOf(e.TagSet, clusterTagKey); {
	case owner != "" && owner != n.ClusterName:
		return false, false, "cluster " + owner + "'s", nil
	case perr != nil:
		return false, false, "no " + cniCreatedAtTag + " tag of the VPC CNI's, so its age is unknown", nil
	case owner == "":
		instance := tagOf(e.TagSet, cniInstanceTag)
		if instance == "" {
			return false, false, "neither this cluster's tag nor the instance it was made for", nil
		}
		var out struct {
			Reservations []struct {
				Instances []struct{ State struct{ Name string } }
			}
		}
		err := call(ctx, aws, &out, "ec2", "describe-instances", "--instance-ids", instance)
		// EC2 answers a describe of an unknown instance ID with
		// InvalidInstanceID.NotFound (EC2 API reference, error codes); an
		// answer that lists no instance says the same, and a terminated
		// one is listed until it goes.
		switch {
		case awscli.IsCode(err, "InvalidInstanceID.NotFound"):
		case err != nil:
			return false, false, "", err
		case len(out.Reservations) > 0 && len(out.Reservations[0].Instances) > 0:
			switch state := out.Reservations[0].Instances[0].State.Name; state {
			case "terminated":
			case "shutting-down":
				return false, true, "untagged, and its instance " + instance + " is shutting down", nil
			default:
				return false, false, "untagged, and its instance " + instance + " is " + state, nil
			}
		}
	}
	if n.Now().Sub(created) < cniCooldown {
		return false, true, "made " + created.Format(time.RFC3339) + ", within the VPC CNI's 5-minute cool-down", nil
	}
	return true, false, "", nil
}

// stuckSettle is how long the sweep waits once only what nothing in the
// destroy deletes is left: six polls, in case an interface's state lagged.
const stuckSettle = 6 * interval

// goesByItself is true of an interface something already deleting
// removes: this cluster's EKS interfaces ("Amazon EKS <cluster>"), an ALB's
// or NLB's, which the LB controller deleted before the cluster went ("ELB
// app/…", "ELB net/…"), a node's, and any being detached. Another
// cluster's, a Classic ELB's ("ELB <name>", which no controller here
// deletes), a VPC endpoint's, another's NAT gateway's, or one made by hand
// is there until someone removes it.
func (n Network) goesByItself(e eni) bool {
	switch {
	case e.Status == "detaching":
		return true
	case e.Status != "in-use":
		return false
	case e.InterfaceType == "network_load_balancer":
		return strings.HasPrefix(e.Description, "ELB net/")
	case e.InterfaceType != "" && e.InterfaceType != "interface":
		return false
	}
	return e.Description == "Amazon EKS "+n.ClusterName || strings.HasPrefix(e.Description, "ELB app/") || strings.HasPrefix(e.Description, "aws-K8S-")
}

// guardDutyTag marks what GuardDuty made for runtime monitoring (GuardDuty
// user guide, runtime-monitoring-agent-resource-clean-up.html: it deletes
// "the VPC endpoint ... and the security group that was tagged as
// GuardDutyManaged:true" when monitoring is turned off).
const guardDutyTag = "GuardDutyManaged"

// GuardDutyServices are the services of GuardDuty's runtime-monitoring
// endpoints: its agent's guardduty-data (GuardDuty user guide,
// runtime-monitoring-agent-connectivity) and the FIPS one, both of which
// GuardDuty's service-linked role may create endpoints for
// (AmazonGuardDutyServiceRolePolicy).
func GuardDutyServices(region string) []string {
	return []string{"com.amazonaws." + region + ".guardduty-data", "com.amazonaws." + region + ".guardduty-data-fips"}
}

// deleteGuardDutysEndpoints deletes GuardDuty's runtime-monitoring
// endpoints in the VPC, told by their service and GuardDuty's tag, and
// returns their network interfaces, which go with them.
func (n Network) deleteGuardDutysEndpoints(ctx context.Context, aws networkAWS, vpcFilter string) ([]string, error) {
	var endpoints struct {
		VpcEndpoints []struct {
			VpcEndpointId, ServiceName, State string
			NetworkInterfaceIds               []string
			Tags                              []tag
		}
	}
	if err := call(ctx, aws, &endpoints, "ec2", "describe-vpc-endpoints", "--filters", vpcFilter); err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range endpoints.VpcEndpoints {
		if !slices.Contains(GuardDutyServices(n.Region), e.ServiceName) || tagOf(e.Tags, guardDutyTag) != "true" {
			continue
		}
		ids = append(ids, e.NetworkInterfaceIds...)
		if strings.EqualFold(e.State, "deleting") || strings.EqualFold(e.State, "deleted") {
			continue
		}
		// A refusal of the endpoint, as opposed to of the call, is in the
		// answer's Unsuccessful list (EC2 API reference, DeleteVpcEndpoints).
		// terraform-provider-aws (vpc_endpoint.go) takes NotFound there
		// as deleted.
		args := []string{"ec2", "delete-vpc-endpoints", "--vpc-endpoint-ids", e.VpcEndpointId}
		var answer struct {
			Unsuccessful []struct {
				Error struct{ Code, Message string }
			}
		}
		if err := call(ctx, aws, &answer, args...); err != nil {
			return nil, err
		}
		for _, u := range answer.Unsuccessful {
			if u.Error.Code != "InvalidVpcEndpoint.NotFound" {
				return nil, awscli.NewError(args, "An error occurred ("+u.Error.Code+") when calling the DeleteVpcEndpoints operation: "+
					u.Error.Message, errors.New("unsuccessful"))
			}
		}
		fmt.Fprintf(n.Log, "network sweep: deleted VPC endpoint %s (%s), which GuardDuty made for runtime monitoring\n", e.VpcEndpointId, e.ServiceName)
	}
	return ids, nil
}

// guardDutys is true of GuardDuty's runtime-monitoring group in this VPC:
// its name (GuardDutyManagedSecurityGroup-<vpc>) and GuardDuty's tag.
func (n Network) guardDutys(g securityGroup) bool {
	return g.GroupName == "GuardDutyManagedSecurityGroup-"+n.VpcID && tagOf(g.Tags, guardDutyTag) == "true"
}

// clusters is true of a group this cluster's LB controller or EKS made,
// tagged with its name, not any cluster's, or the in-tree service
// controller's group of a Classic ELB of this cluster (k8s-elb-<name>,
// tagged kubernetes.io/cluster/<cluster>=owned: k8s.io/cloud-provider-aws
// ensureSecurityGroup; eksctl deletes such orphans the same way,
// deleteOrphanLoadBalancerSecurityGroups).
func (n Network) clusters(g securityGroup) bool {
	return tagOf(g.Tags, "elbv2.k8s.aws/cluster") == n.ClusterName || tagOf(g.Tags, "aws:eks:cluster-name") == n.ClusterName ||
		strings.HasPrefix(g.GroupName, "k8s-elb-") && tagOf(g.Tags, "kubernetes.io/cluster/"+n.ClusterName) == "owned"
}

// deleteGroup revokes the rules that name g in the stack's own groups
// (n.Keep, where the LB controller adds them to the node group) and in
// this cluster's, then deletes g. A rule of any other group that names g
// is not the stack's to change: g is then held, and said so, undeleted.
// DescribeSecurityGroupRules filters by the rule's own group only (EC2 API
// reference: group-id, security-group-rule-id, tag), so every other
// group's rules are read.
func (n Network) deleteGroup(ctx context.Context, aws networkAWS, g securityGroup, all []securityGroup) (held, revoke string, err error) {
	var others []string
	own := map[string]bool{}
	for _, o := range all {
		if o.GroupId != g.GroupId {
			others = append(others, o.GroupId)
			own[o.GroupId] = slices.Contains(n.Keep, o.GroupId) || n.clusters(o)
		}
	}
	var rules struct{ SecurityGroupRules []securityGroupRule }
	if len(others) > 0 {
		if err := call(ctx, aws, &rules, "ec2", "describe-security-group-rules", "--filters", "Name=group-id,Values="+strings.Join(others, ",")); err != nil {
			return "", "", err
		}
	}
	var mine []securityGroupRule
	for _, r := range rules.SecurityGroupRules {
		switch {
		case r.ReferencedGroupInfo.GroupId != g.GroupId:
		case !own[r.GroupId]:
			return fmt.Sprintf("named by rule %s of group %s, which is not this stack's", r.SecurityGroupRuleId, r.GroupId),
				fmt.Sprintf("aws ec2 %s --region %s --group-id %s --security-group-rule-ids %s", revokeVerb(r), n.Region, r.GroupId, r.SecurityGroupRuleId), nil
		default:
			mine = append(mine, r)
		}
	}
	for _, r := range mine {
		if _, err := aws(ctx, "ec2", revokeVerb(r), "--group-id", r.GroupId, "--security-group-rule-ids", r.SecurityGroupRuleId); err != nil {
			return "", "", err
		}
	}
	_, err = aws(ctx, "ec2", "delete-security-group", "--group-id", g.GroupId)
	return "", "", err
}

func revokeVerb(r securityGroupRule) string {
	if r.IsEgress {
		return "revoke-security-group-egress"
	}
	return "revoke-security-group-ingress"
}

// refusedByIAM is an AWS answer that no wait changes: the credentials may
// not make the call (EC2's UnauthorizedOperation and AuthFailure, the
// JSON protocols' AccessDenied/AccessDeniedException).
func refusedByIAM(err error) bool {
	// AccessDenied, and the JSON protocols' AccessDeniedException.
	return awscli.IsCode(err, "UnauthorizedOperation", "AuthFailure", "AccessDenied", "AccessDeniedException")
}

// firstLine is an error's first line, what AWS said of a failed call.
func firstLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}

// call runs an AWS CLI call and decodes its JSON into v.
func call(ctx context.Context, aws networkAWS, v any, args ...string) error {
	out, err := aws(ctx, args...)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("aws %s printed what is not JSON: %w", strings.Join(args, " "), err)
	}
	return nil
}
