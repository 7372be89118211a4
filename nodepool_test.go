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

// requirementsOf maps "key operator" to the values of a node spec's
// requirements.
func requirementsOf(nodeSpec map[string]any) map[string]any {
	got := map[string]any{}
	for _, r := range nodeSpec["requirements"].([]any) {
		r := r.(map[string]any)
		got[r["key"].(string)+" "+r["operator"].(string)] = r["values"]
	}
	return got
}

func TestNodePoolLayer(t *testing.T) {
	run := runDevStack(t)
	rec := run.rec
	karpenterRelease := rec.Get(t, typeHelmRelease, karpenterName+"-controller")
	nodeRole := rec.Get(t, typeRole, karpenterName+"-node")
	accessEntry := rec.Get(t, typeAccessEntry, karpenterName+"-node")
	vpcCni := rec.Get(t, typeAddon, "eks-demo-vpc-cni")
	class := rec.Get(t, typeEC2NodeClass, "eks-demo-nodepools-class-default")
	pool := rec.Get(t, typeNodePool, "eks-demo-nodepools-pool-general")
	classSpec := class.Inputs["spec"].ObjectValue().Mappable()
	poolSpec := pool.Inputs["spec"].ObjectValue().Mappable()

	t.Run("the registered objects match the golden file the CRD tests validate", func(t *testing.T) {
		requireGolden(t, "nodepools-dev.golden.json", nodeObjects(rec))
	})

	t.Run("the node class uses the node role, subnets and security group by ID, IMDSv2 and encrypted volumes", func(t *testing.T) {
		assert.Equal(t, "eks-demo-karpenter-node", classSpec["role"])
		assert.Equal(t, []any{
			map[string]any{"id": "subnet-private-a"}, map[string]any{"id": "subnet-private-b"}, map[string]any{"id": "subnet-private-c"},
		}, classSpec["subnetSelectorTerms"], "the private subnets the lookup found, not a tag on subnets we do not own")
		assert.Equal(t, []any{map[string]any{"id": "sg-eks-demo-node"}}, classSpec["securityGroupSelectorTerms"], "our node security group")
		assert.Equal(t, []any{map[string]any{"alias": "bottlerocket@latest"}}, classSpec["amiSelectorTerms"])
		imds := classSpec["metadataOptions"].(map[string]any)
		assert.Equal(t, "required", imds["httpTokens"])
		assert.Equal(t, 1.0, imds["httpPutResponseHopLimit"], "pods must not reach the node's credentials")
		devices := classSpec["blockDeviceMappings"].([]any)
		require.NotEmpty(t, devices)
		for _, d := range devices {
			assert.Equal(t, true, d.(map[string]any)["ebs"].(map[string]any)["encrypted"], "volume %v", d)
		}
		tags := classSpec["tags"].(map[string]any)
		assert.Equal(t, "eks-demo", tags["karpenter.sh/discovery"])
		assert.Equal(t, "eks-demo-default", tags["Name"])
	})

	t.Run("the default pool is the general menu", func(t *testing.T) {
		nodeSpec := poolSpec["template"].(map[string]any)["spec"].(map[string]any)
		assert.Equal(t, map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}, nodeSpec["nodeClassRef"])
		got := requirementsOf(nodeSpec)
		assert.Equal(t, map[string]any{
			"kubernetes.io/os In":                      []any{"linux"},
			"kubernetes.io/arch In":                    []any{"amd64", "arm64"},
			"karpenter.sh/capacity-type In":            []any{"spot", "on-demand"},
			"karpenter.k8s.aws/instance-category In":   []any{"c", "m", "r"},
			"karpenter.k8s.aws/instance-generation Gt": []any{"4"},
			"karpenter.k8s.aws/instance-cpu Gt":        []any{"1"},
			"karpenter.k8s.aws/instance-memory Gt":     []any{"2048"},
		}, got)
		assert.Equal(t, map[string]any{"cpu": "50", "memory": "128Gi"}, poolSpec["limits"])
		disruption := poolSpec["disruption"].(map[string]any)
		assert.Equal(t, "WhenEmptyOrUnderutilized", disruption["consolidationPolicy"])
		assert.Equal(t, "1m", disruption["consolidateAfter"])
		assert.Equal(t, "1h", nodeSpec["terminationGracePeriod"], "bounds the drain on destroy")
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

	t.Run("pools wait for their node class and vpc-cni", func(t *testing.T) {
		rec.RequireDependsOn(t, pool, class)
		rec.RequireDependsOn(t, pool, vpcCni)
	})

	t.Run("deletes wait long enough for a drain", func(t *testing.T) {
		assert.Equal(t, "1h15m0s", pool.DeleteTimeout, "terminationGracePeriod plus time to terminate")
		assert.Equal(t, "30m0s", class.DeleteTimeout, "the finalizer waits for the class's nodes")
	})
}

func TestSeveralNodePools(t *testing.T) {
	run := runProgram(t, stackConfig(t, "testdata/stack-multipool.yaml"), fakeaws.DevVpc())
	require.NoError(t, run.err)
	rec := run.rec
	vpcCni := rec.Get(t, typeAddon, "eks-prod-vpc-cni")

	t.Run("the registered objects match the golden file the CRD tests validate", func(t *testing.T) {
		requireGolden(t, "nodepools-multipool.golden.json", nodeObjects(rec))
	})

	t.Run("no NodePool exists without its EC2NodeClass", func(t *testing.T) {
		classes := map[string]*mock.Registration{}
		for _, c := range rec.OfType(typeEC2NodeClass) {
			classes[c.Inputs["metadata"].ObjectValue()["name"].StringValue()] = c
		}
		pools := rec.OfType(typeNodePool)
		require.Len(t, pools, 2)
		for _, p := range pools {
			ref := p.Inputs["spec"].ObjectValue()["template"].ObjectValue()["spec"].ObjectValue()["nodeClassRef"].ObjectValue()
			class, ok := classes[ref["name"].StringValue()]
			require.Truef(t, ok, "pool %s names class %s, which is not registered", p.Name, ref["name"].StringValue())
			rec.RequireDependsOn(t, p, class)
			rec.RequireDependsOn(t, p, vpcCni)
		}
	})

	t.Run("the on-demand pool is an amd64 nitro pool of 4 to 32 vCPU with a 1000 vCPU limit", func(t *testing.T) {
		p := rec.Get(t, typeNodePool, "eks-prod-nodepools-pool-on-demand").Inputs["spec"].ObjectValue().Mappable()
		assert.Equal(t, map[string]any{"cpu": "1000"}, p["limits"], "limits replace the default limits as a whole")
		assert.Equal(t, 10.0, p["weight"])
		nodeSpec := p["template"].(map[string]any)["spec"].(map[string]any)
		got := requirementsOf(nodeSpec)
		assert.Equal(t, []any{"amd64"}, got["kubernetes.io/arch In"])
		assert.Equal(t, []any{"on-demand"}, got["karpenter.sh/capacity-type In"])
		assert.Equal(t, []any{"nitro"}, got["karpenter.k8s.aws/instance-hypervisor In"])
		assert.Equal(t, []any{"4", "8", "16", "32"}, got["karpenter.k8s.aws/instance-cpu In"])
		assert.NotContains(t, got, "karpenter.k8s.aws/instance-cpu Gt", "cpus replaces the default cpu floor")
		assert.Equal(t, "2h15m0s", rec.Get(t, typeNodePool, "eks-prod-nodepools-pool-on-demand").DeleteTimeout)
	})

	t.Run("production node classes pin the Bottlerocket version", func(t *testing.T) {
		for _, c := range rec.OfType(typeEC2NodeClass) {
			terms := c.Inputs["spec"].ObjectValue()["amiSelectorTerms"].ArrayValue()
			assert.Equal(t, "bottlerocket@v"+versions.SuggestedBottlerocket, terms[0].ObjectValue()["alias"].StringValue())
		}
	})
}
