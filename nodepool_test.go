package main

import (
	"sort"
	"testing"

	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/mock"
	"nodeless-eks/versions"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	typeEC2NodeClass = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
	typeNodePool     = "kubernetes:karpenter.sh/v1:NodePool"
)

// registeredObject is a custom resource as the API server would receive it.
func registeredObject(reg *mock.Registration) map[string]any {
	return resource.PropertyMap{
		"apiVersion": reg.Inputs["apiVersion"],
		"kind":       reg.Inputs["kind"],
		"metadata":   reg.Inputs["metadata"],
		"spec":       reg.Inputs["spec"],
	}.Mappable()
}

// nodeObjects returns the node classes and pools the program registered,
// classes first, each sorted by name (registrations arrive concurrently).
func nodeObjects(rec *mock.Recorder) []any {
	var out []any
	for _, typ := range []string{typeEC2NodeClass, typeNodePool} {
		regs := rec.OfType(typ)
		sort.Slice(regs, func(i, j int) bool { return regs[i].Name < regs[j].Name })
		for _, reg := range regs {
			out = append(out, registeredObject(reg))
		}
	}
	return out
}

// TestNodePoolsInTheStack: what the stack hands the node pools layer
// (nodepool/nodepool_test.go tests the layer itself).
func TestNodePoolsInTheStack(t *testing.T) {
	run := runDevStack(t)
	rec := run.rec
	karpenterRelease := rec.Get(t, typeHelmRelease, karpenterName+"-controller")
	nodeRole := rec.Get(t, typeRole, karpenterName+"-node")
	accessEntry := rec.Get(t, typeAccessEntry, karpenterName+"-node")
	vpcCni := rec.Get(t, typeAddon, "eks-demo-vpc-cni")
	class := rec.Get(t, typeEC2NodeClass, "eks-demo-nodepools-class-default")
	pool := rec.Get(t, typeNodePool, "eks-demo-nodepools-pool-general")

	t.Run("the registered objects match the golden file the CRD tests validate", func(t *testing.T) {
		requireGolden(t, "nodepools-dev.golden.json", nodeObjects(rec))
	})

	t.Run("node classes wait for the controller, the node role and its access entry", func(t *testing.T) {
		rec.RequireDependsOn(t, class, karpenterRelease)
		rec.RequireDependsOn(t, class, nodeRole)
		rec.RequireDependsOn(t, class, accessEntry)
	})

	t.Run("node classes wait for every policy the node role needs", func(t *testing.T) {
		for _, suffix := range []string{"worker", "cni", "ecr", "ssm"} {
			rec.RequireDependsOn(t, class, rec.Get(t, typeAttachment, karpenterName+"-node-"+suffix))
		}
	})

	t.Run("pools wait for vpc-cni", func(t *testing.T) {
		rec.RequireDependsOn(t, pool, vpcCni)
	})
}

func TestSeveralNodePools(t *testing.T) {
	run := runProgram(t, stackConfig(t, "testdata/stack-multipool.yaml"), fakeaws.DevVpc())
	require.NoError(t, run.err)
	rec := run.rec

	t.Run("the registered objects match the golden file the CRD tests validate", func(t *testing.T) {
		requireGolden(t, "nodepools-multipool.golden.json", nodeObjects(rec))
	})

	t.Run("production node classes pin the Bottlerocket version", func(t *testing.T) {
		for _, c := range rec.OfType(typeEC2NodeClass) {
			terms := c.Inputs["spec"].ObjectValue()["amiSelectorTerms"].ArrayValue()
			assert.Equal(t, "bottlerocket@v"+versions.SuggestedBottlerocket, terms[0].ObjectValue()["alias"].StringValue())
		}
	})
}
