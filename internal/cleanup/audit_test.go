package cleanup

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"nodeless-eks/testkit/moto"
)

// TestAuditAgainstMoto makes, in the stack's account, one leftover of each
// kind the audit reads, with a decoy beside each (another cluster's, a
// cluster whose name extends this one's, another account's), and runs the
// network phase as the command does, for a VPC the stack did not make and
// for one it made: the audit fails over each leftover, names no decoy and
// deletes nothing; once the leftovers go, it passes, and in a named VPC
// GuardDuty's endpoint and group stay, unnamed. It reaches the stack's
// account as the provider would, through its role with an external ID,
// session name, duration and tags.
func TestAuditAgainstMoto(t *testing.T) {
	s := moto.Start(t)
	other := s.In(t, moto.Other, "deployer")
	const cluster = "eks-audit"
	run := func(env []string, v any, args ...string) {
		t.Helper()
		moto.Field(t, s.AWS(t, env, args...), v)
	}
	tags := func(kind string, kv ...string) string {
		var b []string
		for i := 0; i+1 < len(kv); i += 2 {
			b = append(b, "{Key="+kv[i]+",Value="+kv[i+1]+"}")
		}
		return "ResourceType=" + kind + ",Tags=[" + strings.Join(b, ",") + "]"
	}
	var out struct {
		Vpc            struct{ VpcId string }
		Subnet         struct{ SubnetId string }
		Instances      []struct{ InstanceId string }
		VolumeId       string
		LoadBalancers  []struct{ LoadBalancerArn string }
		TargetGroups   []struct{ TargetGroupArn string }
		LaunchTemplate struct{ LaunchTemplateId string }
	}
	run(other, &out, "ec2", "create-vpc", "--cidr-block", "10.1.0.0/16")
	vpc := out.Vpc.VpcId
	var subnets []string
	for _, az := range []string{"a", "b"} {
		run(other, &out, "ec2", "create-subnet", "--vpc-id", vpc, "--cidr-block", "10.1."+map[string]string{"a": "0", "b": "1"}[az]+".0/24",
			"--availability-zone", moto.Region+az)
		subnets = append(subnets, out.Subnet.SubnetId)
	}
	instance := func(env []string, name string) string {
		run(env, &out, "ec2", "run-instances", "--image-id", "ami-12c6146b", "--count", "1", "--instance-type", "t3.micro",
			"--tag-specifications", tags("instance", "eks:eks-cluster-name", name))
		return out.Instances[0].InstanceId
	}
	node, otherNode, terminated := instance(other, cluster), instance(other, cluster+"-2"), instance(other, cluster)
	ambientNode := instance(nil, cluster)
	s.AWS(t, other, "ec2", "terminate-instances", "--instance-ids", terminated)

	lb := func(name string, kv ...string) string {
		run(other, &out, append([]string{"elbv2", "create-load-balancer", "--name", name, "--subnets", subnets[0], subnets[1], "--tags"},
			tagList(kv...)...)...)
		return out.LoadBalancers[0].LoadBalancerArn
	}
	alb, otherALB := lb("k8s-default-web", "elbv2.k8s.aws/cluster", cluster), lb("k8s-default-other", "elbv2.k8s.aws/cluster", cluster+"-2")
	tg := func(name string, kv ...string) string {
		run(other, &out, append([]string{"elbv2", "create-target-group", "--name", name, "--protocol", "HTTP", "--port", "80", "--vpc-id", vpc,
			"--tags"}, tagList(kv...)...)...)
		return out.TargetGroups[0].TargetGroupArn
	}
	group, otherGroup := tg("k8s-default-web", "kubernetes.io/cluster/"+cluster, "owned"), tg("k8s-default-other", "kubernetes.io/cluster/"+cluster+"-2", "owned")
	classic := func(name string, kv ...string) {
		args := []string{"elb", "create-load-balancer", "--load-balancer-name", name, "--listeners",
			"Protocol=TCP,LoadBalancerPort=80,InstanceProtocol=TCP,InstancePort=30080", "--subnets", subnets[0]}
		if len(kv) > 0 {
			args = append(append(args, "--tags"), tagList(kv...)...)
		}
		s.AWS(t, other, args...)
	}
	classic("a1b2c3", "kubernetes.io/cluster/"+cluster, "owned")
	classic("d4e5f6")
	classic("g7h8i9", "kubernetes.io/cluster/"+cluster, "shared") // another's, which the cluster uses
	volume := func(env []string, kv ...string) string {
		run(env, &out, "ec2", "create-volume", "--availability-zone", moto.Region+"a", "--size", "1", "--tag-specifications", tags("volume", kv...))
		return out.VolumeId
	}
	claimed := volume(other, clusterTagKey, cluster, "kubernetes.io/created-for/pvc/namespace", "db", "kubernetes.io/created-for/pvc/name", "data-0")
	// Kept on purpose: marked as the workloads' cleanup marks it, in its
	// own process, before the cluster went.
	kept := volume(other, clusterTagKey, cluster)
	require.NoError(t, eksCluster{Name: cluster, Access: roleAccess("arn:aws:iam::" + moto.Other + ":role/deployer"),
		Arn: "arn:aws:eks:" + moto.Region + ":" + moto.Other + ":cluster/" + cluster}.markKept(context.Background(), map[string]string{kept: "pv-kept"}))
	otherVolume, ambientVolume := volume(other, clusterTagKey, cluster+"-2"), volume(nil, clusterTagKey, cluster)
	s.AWS(t, other, "iam", "create-role", "--role-name", "KarpenterNodeRole-"+cluster, "--assume-role-policy-document", "{}")
	profile := func(name, path string) {
		s.AWS(t, other, "iam", "create-instance-profile", "--instance-profile-name", name, "--path", path)
		s.AWS(t, other, "iam", "add-role-to-instance-profile", "--instance-profile-name", name, "--role-name", "KarpenterNodeRole-"+cluster)
	}
	profile(cluster+"_1234", "/karpenter/"+moto.Region+"/"+cluster+"/0f1e2d3c/")
	profile(cluster+"_987654321", "/") // an earlier Karpenter's
	profile(cluster+"-2_5678", "/karpenter/"+moto.Region+"/"+cluster+"-2/4b5a6978/")
	profile(cluster+"_web", "/") // not a Karpenter name
	template := func(name, owner string) string {
		run(other, &out, "ec2", "create-launch-template", "--launch-template-name", name, "--launch-template-data", "{}",
			"--tag-specifications", tags("launch-template", "eks:eks-cluster-name", owner))
		return out.LaunchTemplate.LaunchTemplateId
	}
	lt, otherLT := template("karpenter.k8s.aws/1111", cluster), template("karpenter.k8s.aws/2222", cluster+"-2")

	// GuardDuty's runtime-monitoring endpoint and group: a named VPC's
	// audit neither deletes nor fails over them.
	var gd struct {
		GroupId     string
		VpcEndpoint struct{ VpcEndpointId string }
	}
	run(other, &gd, "ec2", "create-security-group", "--group-name", "GuardDutyManagedSecurityGroup-"+vpc, "--description", "guardduty", "--vpc-id", vpc,
		"--tag-specifications", tags("security-group", "GuardDutyManaged", "true"))
	run(other, &gd, "ec2", "create-vpc-endpoint", "--vpc-id", vpc, "--vpc-endpoint-type", "Interface", "--service-name",
		"com.amazonaws."+moto.Region+".guardduty-data", "--subnet-ids", subnets[0], "--security-group-ids", gd.GroupId,
		"--tag-specifications", tags("vpc-endpoint", "GuardDutyManaged", "true"))

	env := map[string]string{EnvVpcArn: "arn:aws:ec2:" + moto.Region + ":" + moto.Other + ":vpc/" + vpc, EnvClusterName: cluster,
		EnvNetworkTimeout: "1s", EnvAWSAccess: `{"role":{"roleArn":"arn:aws:iam::` + moto.Other + `:role/deployer","externalId":"ext-1","sessionName":"audit",` +
			`"duration":"15m","tags":{"team":"platform"}}}`}
	getenv := func(k string) string { return env[k] }
	ctx := context.Background()
	leftovers := []string{
		"instance " + node + " (running, a Karpenter node): aws ec2 terminate-instances --region " + moto.Region + " --instance-ids " + node,
		"load balancer k8s-default-web: aws elbv2 delete-load-balancer --region " + moto.Region + " --load-balancer-arn " + alb,
		"target group k8s-default-web (after its load balancer): aws elbv2 delete-target-group --region " + moto.Region + " --target-group-arn " + group,
		"Classic ELB a1b2c3: aws elb delete-load-balancer --region " + moto.Region + " --load-balancer-name a1b2c3",
		"EBS volume " + claimed + " (available, made for claim db/data-0): aws ec2 delete-volume --region " + moto.Region + " --volume-id " + claimed +
			"; or, to keep it, aws ec2 create-tags --region " + moto.Region + " --resources " + claimed + " --tags Key=" + KeptTagKey + ",Value=true",
		"instance profile " + cluster + "_1234 (Karpenter's): aws iam remove-role-from-instance-profile --instance-profile-name " + cluster +
			"_1234 --role-name KarpenterNodeRole-" + cluster + " && aws iam delete-instance-profile --instance-profile-name " + cluster + "_1234",
		"instance profile " + cluster + "_987654321 (Karpenter's): aws iam remove-role-from-instance-profile --instance-profile-name " + cluster +
			"_987654321 --role-name KarpenterNodeRole-" + cluster + " && aws iam delete-instance-profile --instance-profile-name " + cluster + "_987654321",
		"launch template " + lt + " (karpenter.k8s.aws/1111, Karpenter's): aws ec2 delete-launch-template --region " + moto.Region + " --launch-template-id " + lt,
	}
	decoys := []string{otherNode, terminated, ambientNode, otherALB, otherGroup, "d4e5f6", kept, otherVolume, ambientVolume, cluster + "-2_5678", otherLT, "g7h8i9", cluster + "_web"}
	for _, mode := range []struct{ name, auditOnly string }{{"a VPC the stack names: the audit alone", "true"}, {"a VPC the stack made: the audit before the sweep", ""}} {
		t.Run(mode.name+" fails over each leftover and names no decoy", func(t *testing.T) {
			env[EnvAuditOnly] = mode.auditOnly
			var log bytes.Buffer
			err := runNetworkSettled(ctx, getenv, &log)
			require.Error(t, err)
			for _, l := range leftovers {
				assert.Contains(t, err.Error(), "\n  "+l+"\n")
			}
			assert.Equal(t, len(leftovers), strings.Count(err.Error(), "\n  "), "one line each: %v", err)
			for _, d := range decoys {
				assert.NotContains(t, err.Error(), d)
			}
			assert.NotContains(t, log.String(), "network sweep", "the sweep waits for the audit")
		})
	}
	t.Run("it deleted nothing", func(t *testing.T) {
		var instances struct {
			Reservations []struct {
				Instances []struct{ State struct{ Name string } }
			}
		}
		run(other, &instances, "ec2", "describe-instances", "--instance-ids", node)
		assert.Equal(t, "running", instances.Reservations[0].Instances[0].State.Name)
		s.AWS(t, other, "ec2", "describe-volumes", "--volume-ids", claimed)
		s.AWS(t, other, "elbv2", "describe-load-balancers", "--load-balancer-arns", alb)
	})
	t.Run("once the leftovers are deleted by their commands, the destroy-cleanup command, a process of its own, passes", func(t *testing.T) {
		for _, l := range leftovers {
			_, cmds, _ := strings.Cut(l, ": ")
			cmds, _, _ = strings.Cut(cmds, "; or, to keep it")
			for _, c := range strings.Split(cmds, " && ") {
				s.AWS(t, other, strings.Fields(strings.TrimPrefix(c, "aws "))...)
			}
		}
		bin := filepath.Join(t.TempDir(), "destroy-cleanup")
		build := exec.Command("go", "build", "-o", bin, "../../cmd/destroy-cleanup")
		out, err := build.CombinedOutput()
		require.NoError(t, err, "%s", out)
		env[EnvAuditOnly] = "true"
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), EnvPhase+"="+PhaseNetwork, EnvPartial+"=true")
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err = cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), "nothing cluster "+cluster+"'s controllers made is left in AWS")
		assert.NotContains(t, string(out), gd.VpcEndpoint.VpcEndpointId)
		var endpoints struct {
			VpcEndpoints []struct{ State string }
		}
		run(other, &endpoints, "ec2", "describe-vpc-endpoints", "--vpc-endpoint-ids", gd.VpcEndpoint.VpcEndpointId)
		assert.NotEqual(t, "deleted", strings.ToLower(endpoints.VpcEndpoints[0].State), "GuardDuty's endpoint in a named VPC stays")
		s.AWS(t, other, "ec2", "describe-security-groups", "--group-ids", gd.GroupId)
	})
}

// runNetworkSettled runs the phase with a settle of one look.
func runNetworkSettled(ctx context.Context, getenv func(string) string, log *bytes.Buffer) error {
	defer func(s time.Duration) { auditSettle = s }(auditSettle)
	auditSettle = 0
	return runNetwork(ctx, getenv, log)
}

// tagList is ELB's --tags: Key=k,Value=v for each pair.
func tagList(kv ...string) []string {
	var out []string
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, "Key="+kv[i]+",Value="+kv[i+1])
	}
	return out
}

// TestAuditCommandWithoutAStack runs the stateless command against moto,
// with the ambient credentials, as a user whose state is lost would: it
// prints the account and lists what the destroy's audit lists; its delete
// is refused while a cluster of that name exists (the instance stays),
// and without the account the credentials are for; once the cluster is
// gone it deletes, and another cluster's decoy stays.
func TestAuditCommandWithoutAStack(t *testing.T) {
	s := moto.Start(t)
	const cluster = "eks-stateless"
	var out struct {
		Instances []struct{ InstanceId string }
		VolumeId  string
	}
	moto.Field(t, s.AWS(t, nil, "ec2", "run-instances", "--image-id", "ami-12c6146b", "--count", "1", "--instance-type", "t3.micro",
		"--tag-specifications", "ResourceType=instance,Tags=[{Key=eks:eks-cluster-name,Value="+cluster+"}]"), &out)
	node := out.Instances[0].InstanceId
	moto.Field(t, s.AWS(t, nil, "ec2", "create-volume", "--availability-zone", moto.Region+"a", "--size", "1",
		"--tag-specifications", "ResourceType=volume,Tags=[{Key="+clusterTagKey+",Value="+cluster+"}]"), &out)
	volume := out.VolumeId
	moto.Field(t, s.AWS(t, nil, "ec2", "create-volume", "--availability-zone", moto.Region+"a", "--size", "1",
		"--tag-specifications", "ResourceType=volume,Tags=[{Key="+clusterTagKey+",Value="+cluster+"-2}]"), &out)
	decoy := out.VolumeId
	s.AWS(t, nil, "eks", "create-cluster", "--name", cluster, "--role-arn", "arn:aws:iam::"+moto.Account+":role/eks", "--resources-vpc-config", "subnetIds=subnet-1")
	ctx := context.Background()
	aws := func(ctx context.Context, args ...string) ([]byte, error) {
		return s.Try(nil, append(args, "--region", moto.Region)...)
	}
	want, err := leftovers(ctx, aws, cluster, moto.Region)
	require.NoError(t, err)
	require.Len(t, want, 2)

	t.Run("it lists what the destroy's audit lists, and the account", func(t *testing.T) {
		var log bytes.Buffer
		require.NoError(t, AuditCommand(ctx, []string{"--cluster", cluster, "--region", moto.Region}, &log))
		assert.Contains(t, log.String(), "the credentials are for account "+moto.Account)
		for _, l := range want {
			assert.Contains(t, log.String(), "  "+l.String()+"\n")
		}
		assert.Contains(t, log.String(), "instance "+node+" (running, a Karpenter node)", "the instance made above, by its ID")
		assert.Contains(t, log.String(), "EBS volume "+volume+" (available", "the volume made above")
		assert.NotContains(t, log.String(), decoy)
	})
	t.Run("its delete is refused while a cluster of that name exists", func(t *testing.T) {
		err := AuditCommand(ctx, []string{"--cluster", cluster, "--region", moto.Region, "--delete", "--account", moto.Account}, io.Discard)
		require.ErrorContains(t, err, "EKS cluster "+cluster+" exists in "+moto.Region+" (account "+moto.Account+")")
		var got struct {
			Reservations []struct {
				Instances []struct{ State struct{ Name string } }
			}
		}
		moto.Field(t, s.AWS(t, nil, "ec2", "describe-instances", "--instance-ids", node), &got)
		assert.Equal(t, "running", got.Reservations[0].Instances[0].State.Name, "untouched")
	})
	s.AWS(t, nil, "eks", "delete-cluster", "--name", cluster)
	t.Run("its delete is refused without the credentials' account", func(t *testing.T) {
		err := AuditCommand(ctx, []string{"--cluster", cluster, "--region", moto.Region, "--delete"}, io.Discard)
		require.ErrorContains(t, err, "--delete needs --account")
		err = AuditCommand(ctx, []string{"--cluster", cluster, "--region", moto.Region, "--delete", "--account", moto.Other}, io.Discard)
		require.ErrorContains(t, err, "--account "+moto.Other+", and the credentials are for account "+moto.Account+": nothing deleted")
	})
	t.Run("once the cluster is gone, it deletes what it listed and nothing else", func(t *testing.T) {
		var log bytes.Buffer
		require.NoError(t, AuditCommand(ctx, []string{"--cluster", cluster, "--region", moto.Region, "--delete", "--account", moto.Account}, &log), log.String())
		assert.Contains(t, log.String(), "deleted instance "+node)
		assert.Contains(t, log.String(), "deleted EBS volume "+volume)
		assert.Contains(t, log.String(), "nothing cluster "+cluster+"'s controllers made is left")
		s.AWS(t, nil, "ec2", "describe-volumes", "--volume-ids", decoy)
	})
}
