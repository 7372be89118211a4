package cleanup

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	tagkeys "nodeless-eks/internal/names"
	"nodeless-eks/internal/poll"
)

// The leftover audit runs, for every stack, once the EKS cluster is
// deleted (the network phase's command, which the cluster depends on): it
// reads AWS itself, where the bill is, for what the cluster's controllers
// made and did not delete, each kind by the typed describe call of its
// service and the tag or path its maker writes. It fails, naming each
// object with the command that deletes it, over any of them left after
// auditSettle; it deletes nothing. Nothing it reads is the stack's own:
// the stack makes no instance, load balancer, volume, instance profile or
// launch template.
//
//   - instances pending, running, stopping or stopped, tagged
//     eks:eks-cluster-name=<cluster> (karpenter-provider-aws v1.14.3
//     pkg/utils GetTags, v1.EKSClusterNameTagKey, on every instance and
//     launch template it makes; one shutting down goes by itself);
//   - ALBs, NLBs and target groups tagged elbv2.k8s.aws/cluster=<cluster>
//     (the LB controller's default tags, pkg/deploy/tracking) or
//     kubernetes.io/cluster/<cluster>=owned, and Classic ELBs with the
//     latter (the in-tree service controller's, k8s.io/cloud-provider-aws
//     TagNameKubernetesClusterPrefix);
//   - EBS volumes tagged nodeless-eks/cluster=<cluster>, which the EBS CSI
//     add-on writes on every volume it makes (addons/ebscsi.go,
//     extraVolumeTags), except those the workloads' cleanup marked kept
//     (KeptTagKey) and those that go with their instance;
//   - instance profiles under Karpenter's path for the cluster,
//     /karpenter/<region>/<cluster>/ (v1.14.3 pkg/controllers/nodeclass,
//     instanceprofile.FormatPath), and an earlier Karpenter's
//     <cluster>_<hash> at "/";
//   - launch templates tagged eks:eks-cluster-name=<cluster> (v1.14.3
//     pkg/providers/launchtemplate, hydrateCache and DeleteAll filter so).

// KeptTagKey marks an EBS volume the workloads' cleanup kept on purpose.
const KeptTagKey = tagkeys.KeptTagKey

// auditSettle is how long the audit looks again before it fails, in case
// a describe lags a delete that already happened: six polls.
var auditSettle = 6 * interval

// AuditArgs say whose leftovers the audit looks for, and pace it.
type AuditArgs struct {
	ClusterName, Region string
	// Settle bounds the audit: it fails once what it found is still there
	// after Settle. Interval paces its looks.
	Settle, Interval time.Duration
	Log              io.Writer
}

// Audit fails, naming each with its command, over what the cluster's
// controllers left in AWS and is still there after a.Settle.
func Audit(ctx context.Context, aws networkAWS, a AuditArgs) error {
	fmt.Fprintf(a.Log, "leftover audit of cluster %s in %s: instances, load balancers, target groups, EBS volumes, instance "+
		"profiles and launch templates its controllers made\n", a.ClusterName, a.Region)
	for waited := time.Duration(0); ; waited += a.Interval {
		found, err := leftovers(ctx, aws, a.ClusterName, a.Region)
		left := lines(found)
		switch {
		case err != nil && refusedByIAM(err):
			return fmt.Errorf("auditing what cluster %s left in AWS: %w; the credentials that run the destroy may not read it: give "+
				"them the permission (deploy/'s roles have it), then run `pulumi destroy` again", a.ClusterName, err)
		case err != nil && waited >= a.Settle:
			return fmt.Errorf("auditing what cluster %s left in AWS: %w", a.ClusterName, err)
		case err != nil:
			// A load balancer listed and gone before its tags were read
			// (another stack's, deleted meanwhile) answers NotFound.
			fmt.Fprintf(a.Log, "leftover audit: %v; looking again\n", err)
		case len(left) == 0:
			fmt.Fprintf(a.Log, "leftover audit: nothing cluster %s's controllers made is left in AWS\n", a.ClusterName)
			return nil
		case waited >= a.Settle:
			return fmt.Errorf("cluster %s is deleted, and what its controllers made is still in AWS, billed until deleted (each with "+
				"its command):\n  %s\ndelete each (a volume kept on purpose: tag it, as its line says), then run `pulumi destroy` again", a.ClusterName, strings.Join(left, "\n  "))
		}
		if err == nil {
			fmt.Fprintf(a.Log, "leftover audit: %d object(s) still there, looking again: %s\n", len(left), strings.Join(left, "; "))
		}
		if err := poll.Sleep(ctx, a.Interval); err != nil {
			return fmt.Errorf("auditing what cluster %s left in AWS: %w", a.ClusterName, err)
		}
	}
}

// leftover is what the audit found: what it is, the AWS CLI calls that
// delete it, in order (each with its region where the service has one),
// and how to keep it, when it may be kept.
type leftover struct {
	what   string
	delete [][]string
	keep   string
}

func (l leftover) String() string {
	var cmds []string
	for _, c := range l.delete {
		cmds = append(cmds, "aws "+strings.Join(c, " "))
	}
	return l.what + ": " + strings.Join(cmds, " && ") + l.keep
}

// leftovers is one look at every kind, in the order they are deleted: the
// instances first (their volumes and the profiles they hold), load
// balancers before their target groups.
func leftovers(ctx context.Context, aws networkAWS, cluster, region string) ([]leftover, error) {
	var left []leftover
	for _, kind := range []func(context.Context, networkAWS, string, string) ([]leftover, error){
		leftInstances, leftLoadBalancers, leftClassicLoadBalancers, leftVolumes, leftInstanceProfiles, leftLaunchTemplates,
	} {
		found, err := kind(ctx, aws, cluster, region)
		if err != nil {
			return nil, err
		}
		left = append(left, found...)
	}
	return left, nil
}

func lines(left []leftover) []string {
	var out []string
	for _, l := range left {
		out = append(out, l.String())
	}
	return out
}

func leftInstances(ctx context.Context, aws networkAWS, cluster, region string) ([]leftover, error) {
	var out struct {
		Reservations []struct {
			Instances []struct {
				InstanceId string
				State      struct{ Name string }
			}
		}
	}
	if err := call(ctx, aws, &out, "ec2", "describe-instances", "--filters", "Name=tag:eks:eks-cluster-name,Values="+cluster,
		"Name=instance-state-name,Values=pending,running,stopping,stopped"); err != nil {
		return nil, err
	}
	var left []leftover
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			left = append(left, leftover{what: fmt.Sprintf("instance %s (%s, a Karpenter node)", i.InstanceId, i.State.Name),
				delete: [][]string{{"ec2", "terminate-instances", "--region", region, "--instance-ids", i.InstanceId}}})
		}
	}
	return left, nil
}

// clusterTagged is true of an ELB's tags that say the cluster owns it; a
// "shared" one is another's that the cluster uses.
func clusterTagged(tags []tag, cluster string) bool {
	return tagOf(tags, "elbv2.k8s.aws/cluster") == cluster || tagOf(tags, "kubernetes.io/cluster/"+cluster) == "owned"
}

// leftLoadBalancers are the region's ALBs, NLBs and target groups that
// name the cluster; DescribeTags takes 20 ARNs at a time (ELBv2 API
// reference).
func leftLoadBalancers(ctx context.Context, aws networkAWS, cluster, region string) ([]leftover, error) {
	var lbs struct {
		LoadBalancers []struct{ LoadBalancerArn, LoadBalancerName string }
	}
	if err := call(ctx, aws, &lbs, "elbv2", "describe-load-balancers"); err != nil {
		return nil, err
	}
	var groups struct {
		TargetGroups []struct{ TargetGroupArn, TargetGroupName string }
	}
	if err := call(ctx, aws, &groups, "elbv2", "describe-target-groups"); err != nil {
		return nil, err
	}
	found := map[string]leftover{}
	var arns []string
	for _, lb := range lbs.LoadBalancers {
		arns = append(arns, lb.LoadBalancerArn)
		found[lb.LoadBalancerArn] = leftover{what: "load balancer " + lb.LoadBalancerName,
			delete: [][]string{{"elbv2", "delete-load-balancer", "--region", region, "--load-balancer-arn", lb.LoadBalancerArn}}}
	}
	for _, g := range groups.TargetGroups {
		arns = append(arns, g.TargetGroupArn)
		found[g.TargetGroupArn] = leftover{what: "target group " + g.TargetGroupName + " (after its load balancer)",
			delete: [][]string{{"elbv2", "delete-target-group", "--region", region, "--target-group-arn", g.TargetGroupArn}}}
	}
	owned, err := clusterTaggedELBs(ctx, aws, []string{"elbv2", "describe-tags", "--resource-arns"}, arns, cluster)
	if err != nil {
		return nil, err
	}
	// In the order listed: load balancers before their target groups,
	// which cannot go while a listener uses them.
	var left []leftover
	for _, arn := range arns {
		if owned[arn] {
			left = append(left, found[arn])
		}
	}
	return left, nil
}

// leftClassicLoadBalancers are the region's Classic ELBs that name the
// cluster; DescribeTags takes 20 names at a time (ELB API reference).
func leftClassicLoadBalancers(ctx context.Context, aws networkAWS, cluster, region string) ([]leftover, error) {
	var lbs struct {
		LoadBalancerDescriptions []struct{ LoadBalancerName string }
	}
	if err := call(ctx, aws, &lbs, "elb", "describe-load-balancers"); err != nil {
		return nil, err
	}
	var names []string
	for _, lb := range lbs.LoadBalancerDescriptions {
		names = append(names, lb.LoadBalancerName)
	}
	owned, err := clusterTaggedELBs(ctx, aws, []string{"elb", "describe-tags", "--load-balancer-names"}, names, cluster)
	if err != nil {
		return nil, err
	}
	var left []leftover
	for _, name := range names {
		if owned[name] {
			left = append(left, leftover{what: "Classic ELB " + name,
				delete: [][]string{{"elb", "delete-load-balancer", "--region", region, "--load-balancer-name", name}}})
		}
	}
	return left, nil
}

// clusterTaggedELBs asks describe (elbv2's or elb's describe-tags) for the
// tags of ids, 20 at a time (each API's limit), and says which the
// cluster owns; an answer names each by ARN (elbv2) or by name (elb).
func clusterTaggedELBs(ctx context.Context, aws networkAWS, describe, ids []string, cluster string) (map[string]bool, error) {
	owned := map[string]bool{}
	for batch := range slices.Chunk(ids, 20) {
		var tags struct {
			TagDescriptions []struct {
				ResourceArn, LoadBalancerName string
				Tags                          []tag
			}
		}
		if err := call(ctx, aws, &tags, append(slices.Clone(describe), batch...)...); err != nil {
			return nil, err
		}
		for _, d := range tags.TagDescriptions {
			owned[cmp.Or(d.ResourceArn, d.LoadBalancerName)] = clusterTagged(d.Tags, cluster)
		}
	}
	return owned, nil
}

// leftVolumes skips a volume that goes with the instance it is attached
// to (DeleteOnTermination: a node's root volume; the instance, if left, is
// named) and one being deleted.
func leftVolumes(ctx context.Context, aws networkAWS, cluster, region string) ([]leftover, error) {
	var out struct {
		Volumes []struct {
			VolumeId, State string
			Tags            []tag
			Attachments     []struct{ DeleteOnTermination bool }
		}
	}
	if err := call(ctx, aws, &out, "ec2", "describe-volumes", "--filters", "Name=tag:"+clusterTagKey+",Values="+cluster); err != nil {
		return nil, err
	}
	var left []leftover
	for _, v := range out.Volumes {
		if v.State == "deleting" || v.State == "deleted" || tagOf(v.Tags, KeptTagKey) != "" ||
			slices.ContainsFunc(v.Attachments, func(a struct{ DeleteOnTermination bool }) bool { return a.DeleteOnTermination }) {
			continue
		}
		what := "EBS volume " + v.VolumeId + " (" + v.State
		if pvc := tagOf(v.Tags, "kubernetes.io/created-for/pvc/name"); pvc != "" {
			what += ", made for claim " + tagOf(v.Tags, "kubernetes.io/created-for/pvc/namespace") + "/" + pvc
		}
		left = append(left, leftover{what: what + ")", delete: [][]string{{"ec2", "delete-volume", "--region", region, "--volume-id", v.VolumeId}},
			keep: fmt.Sprintf("; or, to keep it, aws ec2 create-tags --region %s --resources %s --tags Key=%s,Value=true", region, v.VolumeId, KeptTagKey)})
	}
	return left, nil
}

func leftInstanceProfiles(ctx context.Context, aws networkAWS, cluster, region string) ([]leftover, error) {
	var out struct {
		InstanceProfiles []struct {
			InstanceProfileName, Path string
			Roles                     []struct{ RoleName string }
		}
	}
	// Every profile of the account, read here: Karpenter's under its path,
	// and those an earlier Karpenter made at "/" as <cluster>_<hash>, which
	// v1.14.3 still deletes (ec2nodeclass.go, the legacy profile name). A
	// path prefix given to the call instead would miss the second kind
	// (and moto 5.2.1 ignores it).
	prefix := "/karpenter/" + region + "/" + cluster + "/"
	if err := call(ctx, aws, &out, "iam", "list-instance-profiles"); err != nil {
		return nil, err
	}
	var left []leftover
	for _, p := range out.InstanceProfiles {
		hash, legacy := strings.CutPrefix(p.InstanceProfileName, cluster+"_")
		legacy = legacy && p.Path == "/" && hash != "" && strings.Trim(hash, "0123456789") == ""
		if !strings.HasPrefix(p.Path, prefix) && !legacy {
			continue
		}
		var cmds [][]string
		for _, r := range p.Roles {
			cmds = append(cmds, []string{"iam", "remove-role-from-instance-profile", "--instance-profile-name", p.InstanceProfileName, "--role-name", r.RoleName})
		}
		cmds = append(cmds, []string{"iam", "delete-instance-profile", "--instance-profile-name", p.InstanceProfileName})
		left = append(left, leftover{what: "instance profile " + p.InstanceProfileName + " (Karpenter's)", delete: cmds})
	}
	return left, nil
}

func leftLaunchTemplates(ctx context.Context, aws networkAWS, cluster, region string) ([]leftover, error) {
	var out struct {
		LaunchTemplates []struct{ LaunchTemplateId, LaunchTemplateName string }
	}
	if err := call(ctx, aws, &out, "ec2", "describe-launch-templates", "--filters", "Name=tag:eks:eks-cluster-name,Values="+cluster); err != nil {
		return nil, err
	}
	var left []leftover
	for _, lt := range out.LaunchTemplates {
		left = append(left, leftover{what: fmt.Sprintf("launch template %s (%s, Karpenter's)", lt.LaunchTemplateId, lt.LaunchTemplateName),
			delete: [][]string{{"ec2", "delete-launch-template", "--region", region, "--launch-template-id", lt.LaunchTemplateId}}})
	}
	return left, nil
}
