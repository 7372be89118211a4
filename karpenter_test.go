package main

import (
	"testing"

	"nodeless-eks/karpenter"
	"nodeless-eks/testkit/mock"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	typeHelmRelease = "kubernetes:helm.sh/v3:Release"
	typePolicy      = "aws:iam/policy:Policy"
	typeAttachment  = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
	typeQueue       = "aws:sqs/queue:Queue"
	typeQueuePolicy = "aws:sqs/queuePolicy:QueuePolicy"
	typeEventRule   = "aws:cloudwatch/eventRule:EventRule"
	typeEventTarget = "aws:cloudwatch/eventTarget:EventTarget"
	typeAccessEntry = "aws:eks/accessEntry:AccessEntry"
	karpenterName   = "eks-demo-karpenter"
	nodeRoleArn     = "arn:aws:iam::" + testAccount + ":role/eks-demo-karpenter-node"
	oidcIssuer      = "oidc.eks.eu-west-1.amazonaws.com/id/0123456789ABCDEF"
)

// TestKarpenterInTheStack: what the stack hands the Karpenter layer and
// what waits for what across layers (karpenter/karpenter_test.go tests the
// layer itself).
func TestKarpenterInTheStack(t *testing.T) {
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

	t.Run("the fargate profile selects the namespace the controller runs in", func(t *testing.T) {
		sel := fargate.Inputs["selectors"].ArrayValue()[0].ObjectValue()
		assert.Equal(t, release.Inputs["namespace"].StringValue(), sel["namespace"].StringValue())
	})

	t.Run("controller policy matches the golden file", func(t *testing.T) {
		requireGolden(t, "karpenter-controller-policy.golden.json", jsonValue(t, controllerPolicy.Inputs["policy"].StringValue()))
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
