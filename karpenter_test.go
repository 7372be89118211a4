package main

import (
	"encoding/json"
	"strings"
	"testing"

	"nodeless-eks/karpenter"
	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/iamtest"
	"nodeless-eks/testkit/mock"
	"nodeless-eks/versions"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	typeHelmRelease   = "kubernetes:helm.sh/v3:Release"
	typePolicy        = "aws:iam/policy:Policy"
	typeAttachment    = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
	typeQueue         = "aws:sqs/queue:Queue"
	typeQueuePolicy   = "aws:sqs/queuePolicy:QueuePolicy"
	typeEventRule     = "aws:cloudwatch/eventRule:EventRule"
	typeEventTarget   = "aws:cloudwatch/eventTarget:EventTarget"
	typeAccessEntry   = "aws:eks/accessEntry:AccessEntry"
	karpenterName     = "eks-demo-karpenter"
	queueArn          = "arn:aws:sqs:eu-west-1:" + testAccount + ":" + karpenterName + "-interruption-queue-7f3a"
	nodeRoleArn       = "arn:aws:iam::" + testAccount + ":role/eks-demo-karpenter-node"
	oidcIssuer        = "oidc.eks.eu-west-1.amazonaws.com/id/0123456789ABCDEF"
	ownedTagCondition = "aws:ResourceTag/kubernetes.io/cluster/eks-demo"
)

func TestKarpenterLayer(t *testing.T) {
	run := runDevStack(t)
	rec := run.rec
	eks := rec.Get(t, typeEksCluster, "eks-demo")
	fargate := rec.Get(t, typeFargateProfile, "eks-demo-karpenter")
	controllerRole := rec.Get(t, typeRole, karpenterName+"-controller")
	controllerPolicy := rec.Get(t, typePolicy, karpenterName+"-controller")
	controllerAttachment := rec.Get(t, typeAttachment, karpenterName+"-controller")
	nodeRole := rec.Get(t, typeRole, karpenterName+"-node")
	queue := rec.Get(t, typeQueue, karpenterName+"-interruption-queue")
	crdRelease := rec.Get(t, typeHelmRelease, karpenterName+"-crd")
	release := rec.Get(t, typeHelmRelease, karpenterName+"-controller")
	statements := iamtest.Parse(t, controllerPolicy.Inputs["policy"].StringValue())

	t.Run("controller role trusts only the karpenter service account through the OIDC provider", func(t *testing.T) {
		trust := iamtest.Parse(t, controllerRole.Inputs["assumeRolePolicy"].StringValue())
		require.Len(t, trust, 1)
		st := trust[0]
		assert.Equal(t, "Allow", st.Effect)
		assert.Equal(t, []string{"sts:AssumeRoleWithWebIdentity"}, st.Action)
		assert.Equal(t, map[string]any{"Federated": "arn:aws:iam::" + testAccount + ":oidc-provider/" + oidcIssuer}, st.Principal)
		assert.Equal(t, map[string]map[string]any{"StringEquals": {
			oidcIssuer + ":sub": "system:serviceaccount:karpenter:karpenter",
			oidcIssuer + ":aud": "sts.amazonaws.com",
		}}, st.Condition, "exactly the sub and aud conditions")
	})

	t.Run("the fargate profile selects the namespace the controller runs in", func(t *testing.T) {
		sel := fargate.Inputs["selectors"].ArrayValue()[0].ObjectValue()
		assert.Equal(t, release.Inputs["namespace"].StringValue(), sel["namespace"].StringValue())
	})

	t.Run("no write action on every resource without a condition", func(t *testing.T) {
		for _, st := range statements {
			for _, r := range st.Resource {
				if r != "*" || len(st.Condition) > 0 {
					continue
				}
				for _, a := range st.Action {
					assert.Truef(t, iamtest.IsReadOnly(a), "statement %s allows %s on * without a condition", st.Sid, a)
				}
			}
		}
	})

	t.Run("launches may use placement groups, as the v1.14 template allows", func(t *testing.T) {
		for _, st := range statements {
			if st.Sid == "AllowScopedEC2InstanceAccessActions" {
				assert.Contains(t, st.Resource, "arn:aws:ec2:eu-west-1:*:placement-group/*")
				assert.Empty(t, st.Condition, "the template scopes these resources by ARN only")
				return
			}
		}
		t.Fatal("no AllowScopedEC2InstanceAccessActions statement")
	})

	t.Run("PassRole only of the node role and only to EC2", func(t *testing.T) {
		found := 0
		for _, st := range statements {
			for _, a := range st.Action {
				if a != "iam:PassRole" && a != "iam:*" && a != "*" {
					continue
				}
				found++
				assert.Equal(t, []string{nodeRoleArn}, st.Resource, "statement %s", st.Sid)
				assert.ElementsMatch(t, []any{"ec2.amazonaws.com", "ec2.amazonaws.com.cn"},
					st.Condition["StringEquals"]["iam:PassedToService"], "statement %s", st.Sid)
			}
		}
		assert.Equal(t, 1, found, "one PassRole statement")
	})

	t.Run("deletion only of resources tagged for this cluster", func(t *testing.T) {
		for _, st := range statements {
			for _, a := range st.Action {
				_, verb, _ := strings.Cut(a, ":")
				if !strings.HasPrefix(verb, "Delete") && !strings.HasPrefix(verb, "Terminate") && !strings.HasPrefix(verb, "RemoveRole") {
					continue
				}
				if strings.HasPrefix(a, "sqs:") {
					assert.Equal(t, []string{queueArn}, st.Resource, "%s only on the queue", a)
					continue
				}
				assert.Equalf(t, "owned", st.Condition["StringEquals"][ownedTagCondition],
					"statement %s allows %s without the cluster tag condition", st.Sid, a)
			}
		}
	})

	t.Run("node creation requires the cluster and nodepool request tags", func(t *testing.T) {
		for _, st := range statements {
			for _, a := range st.Action {
				if a != "ec2:CreateLaunchTemplate" && a != "iam:CreateInstanceProfile" {
					continue
				}
				assert.Equal(t, "owned", st.Condition["StringEquals"]["aws:RequestTag/kubernetes.io/cluster/eks-demo"], "statement %s", st.Sid)
				assert.Equal(t, "eks-demo", st.Condition["StringEquals"]["aws:RequestTag/eks:eks-cluster-name"], "statement %s", st.Sid)
			}
		}
	})

	t.Run("queue actions only on the queue, DescribeCluster only on this cluster", func(t *testing.T) {
		for _, st := range statements {
			for _, a := range st.Action {
				switch {
				case strings.HasPrefix(a, "sqs:"):
					assert.Equal(t, []string{queueArn}, st.Resource, "statement %s", st.Sid)
				case a == "eks:DescribeCluster":
					assert.Equal(t, []string{"arn:aws:eks:eu-west-1:" + testAccount + ":cluster/eks-demo"}, st.Resource)
				}
			}
		}
	})

	t.Run("controller policy matches the golden file", func(t *testing.T) {
		requireGolden(t, "karpenter-controller-policy.golden.json", jsonValue(t, controllerPolicy.Inputs["policy"].StringValue()))
	})

	t.Run("node role has its managed policies and an EC2_LINUX access entry", func(t *testing.T) {
		assert.Equal(t, "eks-demo-karpenter-node", nodeRole.Inputs["name"].StringValue(), "deterministic, so node classes can name it")
		trust := iamtest.Parse(t, nodeRole.Inputs["assumeRolePolicy"].StringValue())
		assert.Equal(t, map[string]any{"Service": "ec2.amazonaws.com"}, trust[0].Principal)
		var attached []string
		for _, a := range rec.OfType(typeAttachment) {
			if a.Inputs["role"].StringValue() == nodeRole.Inputs["name"].StringValue() {
				attached = append(attached, a.Inputs["policyArn"].StringValue())
			}
		}
		assert.ElementsMatch(t, []string{
			"arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
			"arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
			"arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
			"arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
		}, attached)
		entry := rec.Get(t, typeAccessEntry, karpenterName+"-node")
		assert.Equal(t, "EC2_LINUX", entry.Inputs["type"].StringValue())
		assert.Equal(t, nodeRoleArn, entry.Inputs["principalArn"].StringValue())
		assert.Equal(t, "eks-demo", entry.Inputs["clusterName"].StringValue())
	})

	t.Run("the queue keeps events 300s, encrypted, TLS only", func(t *testing.T) {
		assert.Equal(t, 300.0, queue.Inputs["messageRetentionSeconds"].NumberValue())
		assert.Equal(t, true, queue.Inputs["sqsManagedSseEnabled"].V)
		qp := rec.Get(t, typeQueuePolicy, karpenterName+"-interruption-queue")
		var allow, deny bool
		for _, st := range iamtest.Parse(t, qp.Inputs["policy"].StringValue()) {
			assert.Equal(t, []string{queueArn}, st.Resource)
			switch st.Effect {
			case "Allow":
				allow = true
				assert.Equal(t, []string{"sqs:SendMessage"}, st.Action)
				assert.Equal(t, map[string]any{"Service": []any{"events.amazonaws.com", "sqs.amazonaws.com"}}, st.Principal)
			case "Deny":
				deny = true
				assert.Equal(t, "*", st.Principal)
				assert.Equal(t, map[string]map[string]any{"Bool": {"aws:SecureTransport": "false"}}, st.Condition)
			}
		}
		assert.True(t, allow && deny, "one Allow for EventBridge and one Deny for non-TLS access")
	})

	t.Run("five EventBridge rules route interruption events to the queue", func(t *testing.T) {
		want := map[string]string{
			"aws.health/AWS Health Event":                                    "health",
			"aws.ec2/EC2 Spot Instance Interruption Warning":                 "spot",
			"aws.ec2/EC2 Instance Rebalance Recommendation":                  "rebalance",
			"aws.ec2/EC2 Instance State-change Notification":                 "state-change",
			"aws.ec2/EC2 Capacity Reservation Instance Interruption Warning": "reservation",
		}
		// The names rules had before they were shortened to fit 64
		// characters; an alias keeps each existing rule and its target.
		former := map[string]string{
			"health": "health-scheduled-change", "spot": "spot-interruption",
			"state-change": "instance-state-change", "reservation": "capacity-reservation-interruption",
		}
		rules := rec.OfType(typeEventRule)
		require.Len(t, rules, len(want))
		for _, rule := range rules {
			var pattern struct {
				Source     []string `json:"source"`
				DetailType []string `json:"detail-type"`
			}
			require.NoError(t, json.Unmarshal([]byte(rule.Inputs["eventPattern"].StringValue()), &pattern))
			require.Len(t, pattern.Source, 1)
			require.Len(t, pattern.DetailType, 1)
			key, ok := want[pattern.Source[0]+"/"+pattern.DetailType[0]]
			require.Truef(t, ok, "unexpected pattern %v", pattern)
			assert.Equal(t, karpenterName+"-"+key, rule.Name)
			target := rec.Get(t, typeEventTarget, rule.Name)
			assert.Equal(t, queueArn, target.Inputs["arn"].StringValue())
			assert.Equal(t, rule.Name+"-7f3a", target.Inputs["rule"].StringValue())
			if old, renamed := former[key]; renamed {
				assert.Equal(t, []string{karpenterName + "-" + old}, rule.Aliases, "rule %s keeps its former name as an alias", key)
				assert.Equal(t, []string{karpenterName + "-" + old}, target.Aliases, "target %s keeps its former name as an alias", key)
			} else {
				assert.Empty(t, rule.Aliases, "rule %s was never renamed", key)
			}
		}
	})

	t.Run("charts come anonymously from the karpenter OCI repository at the pinned version", func(t *testing.T) {
		for _, r := range []*mock.Registration{crdRelease, release} {
			assert.True(t, strings.HasPrefix(r.Inputs["chart"].StringValue(), "oci://public.ecr.aws/karpenter/"))
			assert.Equal(t, versions.Karpenter, r.Inputs["version"].StringValue())
			assert.Equal(t, "karpenter", r.Inputs["namespace"].StringValue())
			assert.NotContains(t, r.Inputs, resource.PropertyKey("repositoryOpts"), "no registry login")
		}
		assert.Equal(t, "oci://public.ecr.aws/karpenter/karpenter-crd", crdRelease.Inputs["chart"].StringValue())
		assert.Equal(t, "karpenter", release.Inputs["name"].StringValue(), "the release name is the service account the role trusts")
		assert.Equal(t, true, release.Inputs["skipCrds"].V, "CRDs come from karpenter-crd")
		assert.GreaterOrEqual(t, release.Inputs["timeout"].NumberValue(), 300.0, "covers a Fargate cold start: a node in 1-2 minutes, the image in under one")
	})

	t.Run("the controller values match the golden file the chart is rendered with", func(t *testing.T) {
		values := release.Inputs["values"]
		require.True(t, values.IsObject(), "values must be known under mocks")
		requireGolden(t, "karpenter-values.golden.json", values.ObjectValue().Mappable())
		resources := values.ObjectValue()["controller"].ObjectValue()["resources"].ObjectValue().Mappable()
		sized := map[string]any{"cpu": karpenter.SmallController.CPU, "memory": karpenter.SmallController.Memory}
		assert.Equal(t, map[string]any{"requests": sized, "limits": sized}, resources,
			"requests equal limits, at the small size a dev stack gets (karpenter/fargate_test.go holds it to a whole Fargate size)")
		settings := values.ObjectValue()["settings"].ObjectValue()
		assert.Equal(t, karpenterName+"-interruption-queue-7f3a", settings["interruptionQueue"].StringValue())
		assert.Equal(t, "Default", values.ObjectValue()["dnsPolicy"].StringValue())
	})

	t.Run("a new Kubernetes minor replaces the controller's Fargate pods", func(t *testing.T) {
		annotationsAt := func(version string) map[string]any {
			cfg := stackConfig(t, "Pulumi.dev.yaml")
			cfg[testProject+":kubernetesVersion"] = version
			run := runProgram(t, cfg, fakeaws.DevVpc())
			require.NoError(t, run.err)
			values := run.rec.Get(t, typeHelmRelease, karpenterName+"-controller").Inputs["values"].ObjectValue()
			return values["podAnnotations"].ObjectValue().Mappable()
		}
		at35, at36 := annotationsAt("1.35"), annotationsAt("1.36")
		assert.Equal(t, map[string]any{karpenter.KubernetesVersionAnnotation: "1.35"}, at35)
		assert.NotEqual(t, at35, at36, "the pod template must change with the minor, or Fargate keeps the old kubelet")
	})

	t.Run("the controller release waits for CRDs, Fargate, the policy attachment and the queue", func(t *testing.T) {
		rec.RequireDependsOn(t, release, crdRelease)
		rec.RequireDependsOn(t, release, fargate)
		rec.RequireDependsOn(t, release, controllerAttachment)
		rec.RequireDependsOn(t, release, controllerRole)
		rec.RequireDependsOn(t, release, queue)
	})

	t.Run("the CRD release does not wait for the fargate profile", func(t *testing.T) {
		rec.RequireNotDependsOn(t, crdRelease, fargate)
		rec.RequireDependsOn(t, crdRelease, eks)
	})

	t.Run("IAM, the queue and the rules do not wait for the cluster beyond the OIDC provider", func(t *testing.T) {
		independent := []*mock.Registration{nodeRole, controllerPolicy, queue, rec.Get(t, typeQueuePolicy, karpenterName+"-interruption-queue")}
		independent = append(independent, rec.OfType(typeEventRule)...)
		independent = append(independent, rec.OfType(typeEventTarget)...)
		for _, a := range rec.OfType(typeAttachment) {
			if a.Name != karpenterName+"-controller" {
				independent = append(independent, a)
			}
		}
		for _, reg := range independent {
			rec.RequireNotDependsOn(t, reg, eks)
			rec.RequireNotDependsOn(t, reg, fargate)
		}
		// The controller role's trust names the OIDC provider, which only
		// the cluster component can give; it must not wait for Fargate.
		rec.RequireDependsOn(t, controllerRole, eks)
		rec.RequireNotDependsOn(t, controllerRole, fargate)
	})
}

func TestControllerSizeByStackClass(t *testing.T) {
	tests := []struct {
		name        string
		stackFile   string
		set         map[string]string
		release     string
		cpu, memory string
	}{
		{"a dev stack gets the small size", "Pulumi.dev.yaml", nil, karpenterName + "-controller", "250m", "768Mi"},
		{"a production stack gets the upstream size", "testdata/stack-multipool.yaml", nil, "eks-prod-karpenter-controller", "1", "1792Mi"},
		{"config overrides the class default", "Pulumi.dev.yaml", map[string]string{"controllerResources": `{"cpu":"0.5","memory":"1792Mi"}`},
			karpenterName + "-controller", "0.5", "1792Mi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := stackWith(t, tt.stackFile, tt.set)
			values := run.rec.Get(t, typeHelmRelease, tt.release).Inputs["values"].ObjectValue()
			resources := values["controller"].ObjectValue()["resources"].ObjectValue().Mappable()
			sized := map[string]any{"cpu": tt.cpu, "memory": tt.memory}
			assert.Equal(t, map[string]any{"requests": sized, "limits": sized}, resources)
		})
	}
}

func TestNodeRepair(t *testing.T) {
	tests := []struct {
		name string
		set  map[string]string
		on   bool
	}{
		{"on by default: the feature gate and the node monitoring agent", nil, true},
		{"off: neither", map[string]string{"nodeRepair": "false"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := stackWith(t, "Pulumi.dev.yaml", tt.set)
			values := run.rec.Get(t, typeHelmRelease, karpenterName+"-controller").Inputs["values"].ObjectValue()
			gates := values["settings"].ObjectValue()["featureGates"].ObjectValue()
			assert.Equal(t, tt.on, gates["nodeRepair"].V, "settings.featureGates.nodeRepair")
			found := false
			for _, a := range run.rec.OfType(typeAddon) {
				if a.Inputs["addonName"].StringValue() == "eks-node-monitoring-agent" {
					found = true
					assert.Equal(t, "v1.4.0-eksbuild.1", a.Inputs["addonVersion"].StringValue(), "the EKS default version")
				}
			}
			assert.Equal(t, tt.on, found, "the node monitoring agent reports the conditions node repair acts on")
		})
	}
}
