package karpenter

import (
	"encoding/json"
	"strings"
	"testing"

	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/iamtest"
	"nodeless-eks/testkit/mock"
	"nodeless-eks/testkit/tokens"
	"nodeless-eks/versions"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	layerName         = "eks-demo-karpenter"
	oidcIssuer        = fakeaws.Issuer
	queueArn          = "arn:aws:sqs:eu-west-1:" + fakeaws.AccountID + ":" + layerName + "-interruption-queue" + fakeaws.Suffix
	nodeRoleArn       = "arn:aws:iam::" + fakeaws.AccountID + ":role/eks-demo-karpenter-node"
	ownedTagCondition = "aws:ResourceTag/kubernetes.io/cluster/eks-demo"
)

// devArgs are what the program hands the layer on the dev stack, with
// plain values and stand-ins for what the cluster layer creates.
func devArgs(provider *kubernetes.Provider, fargate pulumi.Resource) *Args {
	return &Args{
		ClusterName:         "eks-demo",
		KubernetesVersion:   "1.36",
		Region:              fakeaws.Region,
		ChartVersion:        versions.Karpenter,
		ControllerResources: SmallController,
		NodeRepair:          true,
		CreatedClusterName:  pulumi.String("eks-demo"),
		ClusterEndpoint:     pulumi.String(fakeaws.Endpoint),
		OidcProviderArn:     pulumi.String("arn:aws:iam::" + fakeaws.AccountID + ":oidc-provider/" + fakeaws.Issuer),
		OidcIssuer:          pulumi.String(fakeaws.Issuer),
		Provider:            provider,
		FargateProfile:      fargate,
	}
}

// newLayer runs New alone against the fake account, with args as devArgs
// leaves them after change; it returns the recorder and the stand-in of
// the Fargate profile.
func newLayer(t *testing.T, change func(*Args)) (*mock.Recorder, *mock.Registration) {
	t.Helper()
	rec := (&fakeaws.Account{Vpc: fakeaws.DevVpc(), ClusterName: "eks-demo"}).Recorder("nodeless-eks", "dev")
	err := rec.Run(t, nil, false, func(ctx *pulumi.Context) error {
		fargate, err := mock.NewStandIn(ctx, "fargate-profile")
		if err != nil {
			return err
		}
		provider, err := kubernetes.NewProvider(ctx, "k8s", &kubernetes.ProviderArgs{})
		if err != nil {
			return err
		}
		args := devArgs(provider, fargate)
		if change != nil {
			change(args)
		}
		_, err = New(ctx, layerName, args)
		return err
	}).Err
	require.NoError(t, err)
	return rec, rec.Get(t, mock.StandInType, "fargate-profile")
}

func TestKarpenterLayer(t *testing.T) {
	rec, fargate := newLayer(t, nil)
	provider := rec.Get(t, tokens.KubernetesProvider, "k8s")
	controllerRole := rec.Get(t, tokens.Role, layerName+"-controller")
	controllerPolicy := rec.Get(t, tokens.Policy, layerName+"-controller")
	controllerAttachment := rec.Get(t, tokens.RolePolicyAttachment, layerName+"-controller")
	nodeRole := rec.Get(t, tokens.Role, layerName+"-node")
	queue := rec.Get(t, tokens.Queue, layerName+"-interruption-queue")
	crdRelease := rec.Get(t, tokens.HelmRelease, layerName+"-crd")
	release := rec.Get(t, tokens.HelmRelease, layerName+"-controller")
	statements := iamtest.Parse(t, controllerPolicy.Inputs["policy"].StringValue())

	t.Run("controller role trusts only the karpenter service account through the OIDC provider", func(t *testing.T) {
		trust := iamtest.Parse(t, controllerRole.Inputs["assumeRolePolicy"].StringValue())
		require.Len(t, trust, 1)
		st := trust[0]
		assert.Equal(t, "Allow", st.Effect)
		assert.Equal(t, []string{"sts:AssumeRoleWithWebIdentity"}, st.Action)
		assert.Equal(t, map[string]any{"Federated": "arn:aws:iam::" + fakeaws.AccountID + ":oidc-provider/" + oidcIssuer}, st.Principal)
		assert.Equal(t, map[string]map[string]any{"StringEquals": {
			oidcIssuer + ":sub": "system:serviceaccount:karpenter:karpenter",
			oidcIssuer + ":aud": "sts.amazonaws.com",
		}}, st.Condition, "exactly the sub and aud conditions")
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
		found := 0
		defer func() { assert.Equal(t, 2, found, "CreateLaunchTemplate and CreateInstanceProfile are granted") }()
		for _, st := range statements {
			for _, a := range st.Action {
				if a != "ec2:CreateLaunchTemplate" && a != "iam:CreateInstanceProfile" {
					continue
				}
				found++
				assert.Equal(t, "owned", st.Condition["StringEquals"]["aws:RequestTag/kubernetes.io/cluster/eks-demo"], "statement %s", st.Sid)
				assert.Equal(t, "eks-demo", st.Condition["StringEquals"]["aws:RequestTag/eks:eks-cluster-name"], "statement %s", st.Sid)
			}
		}
	})

	t.Run("queue actions only on the queue, DescribeCluster only on this cluster", func(t *testing.T) {
		queueActions, describe := 0, 0
		defer func() {
			assert.Positive(t, queueActions, "the controller reads its queue")
			assert.Equal(t, 1, describe, "one statement grants eks:DescribeCluster")
		}()
		for _, st := range statements {
			for _, a := range st.Action {
				switch {
				case strings.HasPrefix(a, "sqs:"):
					queueActions++
					assert.Equal(t, []string{queueArn}, st.Resource, "statement %s", st.Sid)
				case a == "eks:DescribeCluster":
					describe++
					assert.Equal(t, []string{"arn:aws:eks:eu-west-1:" + fakeaws.AccountID + ":cluster/eks-demo"}, st.Resource)
				}
			}
		}
	})

	t.Run("node role has its managed policies and an EC2_LINUX access entry", func(t *testing.T) {
		assert.Equal(t, "eks-demo-karpenter-node", nodeRole.Inputs["name"].StringValue(), "deterministic, so node classes can name it")
		trust := iamtest.Parse(t, nodeRole.Inputs["assumeRolePolicy"].StringValue())
		assert.Equal(t, map[string]any{"Service": "ec2.amazonaws.com"}, trust[0].Principal)
		var attached []string
		for _, a := range rec.OfType(tokens.RolePolicyAttachment) {
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
		entry := rec.Get(t, tokens.AccessEntry, layerName+"-node")
		assert.Equal(t, "EC2_LINUX", entry.Inputs["type"].StringValue())
		assert.Equal(t, nodeRoleArn, entry.Inputs["principalArn"].StringValue())
		assert.Equal(t, "eks-demo", entry.Inputs["clusterName"].StringValue())
	})

	t.Run("the queue keeps events 300s, encrypted, TLS only", func(t *testing.T) {
		assert.Equal(t, 300.0, queue.Inputs["messageRetentionSeconds"].NumberValue())
		assert.Equal(t, true, queue.Inputs["sqsManagedSseEnabled"].V)
		qp := rec.Get(t, tokens.QueuePolicy, layerName+"-interruption-queue")
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
		rules := rec.OfType(tokens.EventRule)
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
			assert.Equal(t, layerName+"-"+key, rule.Name)
			target := rec.Get(t, tokens.EventTarget, rule.Name)
			assert.Equal(t, queueArn, target.Inputs["arn"].StringValue())
			assert.Equal(t, rule.Name+"-7f3a", target.Inputs["rule"].StringValue())
			if old, renamed := former[key]; renamed {
				assert.Equal(t, []string{layerName + "-" + old}, rule.Aliases, "rule %s keeps its former name as an alias", key)
				assert.Equal(t, []string{layerName + "-" + old}, target.Aliases, "target %s keeps its former name as an alias", key)
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

	t.Run("the controller release waits for CRDs, Fargate, the policy attachment and the queue", func(t *testing.T) {
		rec.RequireDependsOn(t, release, crdRelease)
		rec.RequireDependsOn(t, release, fargate)
		rec.RequireDependsOn(t, release, controllerAttachment)
		rec.RequireDependsOn(t, release, controllerRole)
		rec.RequireDependsOn(t, release, queue)
	})

	t.Run("the CRD release waits for the cluster's API, not for Fargate", func(t *testing.T) {
		rec.RequireNotDependsOn(t, crdRelease, fargate)
		rec.RequireDependsOn(t, crdRelease, provider)
	})

	t.Run("IAM, the queue and the rules wait for neither the API server nor Fargate", func(t *testing.T) {
		independent := []*mock.Registration{controllerRole, nodeRole, controllerPolicy, queue, rec.Get(t, tokens.QueuePolicy, layerName+"-interruption-queue")}
		independent = append(independent, rec.OfType(tokens.EventRule)...)
		independent = append(independent, rec.OfType(tokens.EventTarget)...)
		independent = append(independent, rec.OfType(tokens.RolePolicyAttachment)...)
		for _, reg := range independent {
			rec.RequireNotDependsOn(t, reg, provider)
			rec.RequireNotDependsOn(t, reg, fargate)
		}
	})

	t.Run("node repair is Karpenter's feature gate", func(t *testing.T) {
		for _, on := range []bool{true, false} {
			rec, _ := newLayer(t, func(a *Args) { a.NodeRepair = on })
			values := rec.Get(t, tokens.HelmRelease, layerName+"-controller").Inputs["values"].ObjectValue()
			assert.Equal(t, on, values["settings"].ObjectValue()["featureGates"].ObjectValue()["nodeRepair"].V)
		}
	})

	t.Run("a new Kubernetes minor replaces the controller's Fargate pods", func(t *testing.T) {
		annotationsAt := func(version string) map[string]any {
			rec, _ := newLayer(t, func(a *Args) { a.KubernetesVersion = version })
			values := rec.Get(t, tokens.HelmRelease, layerName+"-controller").Inputs["values"].ObjectValue()
			return values["podAnnotations"].ObjectValue().Mappable()
		}
		at35, at36 := annotationsAt("1.35"), annotationsAt("1.36")
		assert.Equal(t, map[string]any{KubernetesVersionAnnotation: "1.35"}, at35)
		assert.NotEqual(t, at35, at36, "the pod template must change with the minor, or Fargate keeps the old kubelet")
	})

	t.Run("the controller's resources are the ones it is given, as requests and limits", func(t *testing.T) {
		rec, _ := newLayer(t, func(a *Args) { a.ControllerResources = ProductionController })
		values := rec.Get(t, tokens.HelmRelease, layerName+"-controller").Inputs["values"].ObjectValue()
		sized := map[string]any{"cpu": ProductionController.CPU, "memory": ProductionController.Memory}
		assert.Equal(t, map[string]any{"requests": sized, "limits": sized}, values["controller"].ObjectValue()["resources"].ObjectValue().Mappable())
	})
}

func TestArgsRefusedBeforeAnythingIsRegistered(t *testing.T) {
	rec := mock.New("nodeless-eks", "dev")
	err := rec.Run(t, nil, false, func(ctx *pulumi.Context) error {
		args := devArgs(&kubernetes.Provider{}, &mock.StandIn{})
		args.ClusterName = strings.Repeat("c", 33)
		_, err := New(ctx, layerName, args)
		return err
	}).Err
	rec.RequireRefused(t, err, `ClusterName "ccccccccccccccccccccccccccccccccc": longer than 32 characters`)
}
