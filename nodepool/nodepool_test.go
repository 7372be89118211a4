package nodepool

import (
	"encoding/json"
	"sort"
	"testing"

	"nodeless-eks/internal/names"
	"nodeless-eks/nodepool/spec"
	"nodeless-eks/testkit/mock"
	"nodeless-eks/testkit/stackfile"
	"nodeless-eks/testkit/tokens"
	"nodeless-eks/versions"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	stackLabel = "nodeless-eks.dev"
)

// layer is New run alone under the mock engine, with stand-ins where the
// program hands it the Karpenter release, the node prerequisites and
// vpc-cni.
type layer struct {
	rec                      *mock.Recorder
	release, vpcCni, nodeACL *mock.Registration
	prerequisites            []*mock.Registration
}

// newLayer runs New for the pools and classes as spec.Resolve leaves them.
func newLayer(t *testing.T, pools map[string]spec.Pool, classes map[string]spec.NodeClass) layer {
	t.Helper()
	rec := mock.New("nodeless-eks", "dev")
	res := rec.Run(t, nil, false, func(ctx *pulumi.Context) error {
		standIns, err := mock.NewStandIns(ctx, "karpenter-release", "node-worker-policy", "node-access-entry", "vpc-cni")
		if err != nil {
			return err
		}
		provider, err := kubernetes.NewProvider(ctx, "k8s", &kubernetes.ProviderArgs{})
		if err != nil {
			return err
		}
		_, err = New(ctx, "eks-demo-nodepools", &Args{
			ClusterName:       "eks-demo",
			StackLabel:        stackLabel,
			Pools:             pools,
			Classes:           classes,
			NodeRoleName:      pulumi.String("eks-demo-karpenter-node"),
			SubnetIDs:         pulumi.ToStringArray([]string{"subnet-private-a", "subnet-private-b", "subnet-private-c"}),
			SecurityGroupID:   pulumi.String("sg-eks-demo-node"),
			Provider:          provider,
			KarpenterRelease:  standIns["karpenter-release"],
			NodePrerequisites: []pulumi.Resource{standIns["node-worker-policy"], standIns["node-access-entry"]},
			VpcCni:            standIns["vpc-cni"],
		})
		return err
	})
	require.NoError(t, res.Err)
	l := layer{rec: rec,
		release: rec.Get(t, mock.StandInType, "karpenter-release"),
		vpcCni:  rec.Get(t, mock.StandInType, "vpc-cni"),
		nodeACL: rec.Get(t, mock.StandInType, "node-access-entry"),
	}
	l.prerequisites = []*mock.Registration{rec.Get(t, mock.StandInType, "node-worker-policy"), l.nodeACL}
	return l
}

// multipool is the pools and classes of testdata/stack-multipool.yaml.
func multipool(t *testing.T) (map[string]spec.Pool, map[string]spec.NodeClass) {
	t.Helper()
	cfg, err := stackfile.Load("../Pulumi.yaml", "../testdata/stack-multipool.yaml")
	require.NoError(t, err)
	var pools map[string]spec.Pool
	var classes map[string]spec.NodeClass
	require.NoError(t, json.Unmarshal([]byte(cfg["nodeless-eks:nodePools"]), &pools))
	require.NoError(t, json.Unmarshal([]byte(cfg["nodeless-eks:nodeClasses"]), &classes))
	return spec.Resolve(pools, classes)
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

func TestDefaultPoolAndClass(t *testing.T) {
	pools, classes := spec.Resolve(nil, nil)
	l := newLayer(t, pools, classes)
	rec := l.rec
	class := rec.Get(t, tokens.EC2NodeClass, "eks-demo-nodepools-class-default")
	pool := rec.Get(t, tokens.NodePool, "eks-demo-nodepools-pool-general")
	classSpec := class.Inputs["spec"].ObjectValue().Mappable()
	poolSpec := pool.Inputs["spec"].ObjectValue().Mappable()

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
		assert.Equal(t, map[string]any{
			"kubernetes.io/os In":                      []any{"linux"},
			"kubernetes.io/arch In":                    []any{"amd64", "arm64"},
			"karpenter.sh/capacity-type In":            []any{"spot", "on-demand"},
			"karpenter.k8s.aws/instance-category In":   []any{"c", "m", "r"},
			"karpenter.k8s.aws/instance-generation Gt": []any{"4"},
			"karpenter.k8s.aws/instance-cpu Gt":        []any{"1"},
			"karpenter.k8s.aws/instance-memory Gt":     []any{"2048"},
		}, requirementsOf(nodeSpec))
		assert.Equal(t, map[string]any{"cpu": "50", "memory": "128Gi"}, poolSpec["limits"])
		disruption := poolSpec["disruption"].(map[string]any)
		assert.Equal(t, "WhenEmptyOrUnderutilized", disruption["consolidationPolicy"])
		assert.Equal(t, "1m", disruption["consolidateAfter"])
		assert.Equal(t, "1h", nodeSpec["terminationGracePeriod"], "bounds the drain on destroy")
	})

	t.Run("both carry the stack label the destroy cleanup and the watch tell them by", func(t *testing.T) {
		for _, reg := range []*mock.Registration{class, pool} {
			labels := reg.Inputs["metadata"].ObjectValue()["labels"].ObjectValue()
			assert.Equal(t, stackLabel, labels[names.StackLabelKey].StringValue(), reg.Name)
		}
	})

	t.Run("node classes wait for the Karpenter release and every node prerequisite", func(t *testing.T) {
		rec.RequireDependsOn(t, class, l.release)
		for _, p := range l.prerequisites {
			rec.RequireDependsOn(t, class, p)
		}
		rec.RequireNotDependsOn(t, class, l.vpcCni)
	})

	t.Run("pools wait for their node class and vpc-cni", func(t *testing.T) {
		rec.RequireDependsOn(t, pool, class)
		rec.RequireDependsOn(t, pool, l.vpcCni)
	})

	t.Run("deletes wait long enough for a drain", func(t *testing.T) {
		assert.Equal(t, "1h15m0s", pool.DeleteTimeout, "terminationGracePeriod plus time to terminate")
		assert.Equal(t, "30m0s", class.DeleteTimeout, "the finalizer waits for the class's nodes")
	})
}

func TestSeveralPools(t *testing.T) {
	pools, classes := multipool(t)
	l := newLayer(t, pools, classes)
	rec := l.rec

	t.Run("no NodePool exists without its EC2NodeClass", func(t *testing.T) {
		classes := map[string]*mock.Registration{}
		for _, c := range rec.OfType(tokens.EC2NodeClass) {
			classes[c.Inputs["metadata"].ObjectValue()["name"].StringValue()] = c
		}
		pools := rec.OfType(tokens.NodePool)
		require.Len(t, pools, 2)
		sort.Slice(pools, func(i, j int) bool { return pools[i].Name < pools[j].Name })
		for _, p := range pools {
			ref := p.Inputs["spec"].ObjectValue()["template"].ObjectValue()["spec"].ObjectValue()["nodeClassRef"].ObjectValue()
			class, ok := classes[ref["name"].StringValue()]
			require.Truef(t, ok, "pool %s names class %s, which is not registered", p.Name, ref["name"].StringValue())
			rec.RequireDependsOn(t, p, class)
			rec.RequireDependsOn(t, p, l.vpcCni)
		}
	})

	t.Run("the on-demand pool is an amd64 nitro pool of 4 to 32 vCPU with a 1000 vCPU limit", func(t *testing.T) {
		reg := rec.Get(t, tokens.NodePool, "eks-demo-nodepools-pool-on-demand")
		p := reg.Inputs["spec"].ObjectValue().Mappable()
		assert.Equal(t, map[string]any{"cpu": "1000"}, p["limits"], "limits replace the default limits as a whole")
		assert.Equal(t, 10.0, p["weight"])
		got := requirementsOf(p["template"].(map[string]any)["spec"].(map[string]any))
		assert.Equal(t, []any{"amd64"}, got["kubernetes.io/arch In"])
		assert.Equal(t, []any{"on-demand"}, got["karpenter.sh/capacity-type In"])
		assert.Equal(t, []any{"nitro"}, got["karpenter.k8s.aws/instance-hypervisor In"])
		assert.Equal(t, []any{"4", "8", "16", "32"}, got["karpenter.k8s.aws/instance-cpu In"])
		assert.NotContains(t, got, "karpenter.k8s.aws/instance-cpu Gt", "cpus replaces the default cpu floor")
		assert.Equal(t, "2h15m0s", reg.DeleteTimeout, "its 2h terminationGracePeriod plus time to terminate")
	})

	t.Run("the classes keep their pinned Bottlerocket release", func(t *testing.T) {
		classes := rec.OfType(tokens.EC2NodeClass)
		require.Len(t, classes, 2)
		for _, c := range classes {
			terms := c.Inputs["spec"].ObjectValue()["amiSelectorTerms"].ArrayValue()
			assert.Equal(t, "bottlerocket@v1.66.0", terms[0].ObjectValue()["alias"].StringValue(), c.Name)
		}
	})
}

func TestArgsRefusedBeforeAnythingIsRegistered(t *testing.T) {
	pools, classes := spec.Resolve(nil, nil)
	pools["general"] = func(p spec.Pool) spec.Pool { p.NodeClass = "missing"; return p }(pools["general"])
	rec := mock.New("nodeless-eks", "dev")
	err := rec.Run(t, nil, false, func(ctx *pulumi.Context) error {
		_, err := New(ctx, "pools", &Args{ClusterName: "c", StackLabel: "s", Pools: pools, Classes: classes,
			NodeRoleName: pulumi.String("r"), SubnetIDs: pulumi.ToStringArray([]string{"s"}), SecurityGroupID: pulumi.String("sg"),
			Provider: &kubernetes.Provider{}, KarpenterRelease: &mock.StandIn{}, NodePrerequisites: []pulumi.Resource{&mock.StandIn{}},
			VpcCni: &mock.StandIn{}})
		return err
	}).Err
	rec.RequireRefused(t, err, `pool general: node class "missing" is not among Classes`)
}

// TestKubeletSettingsReachTheClass: a class's kubelet settings are
// registered as its spec.kubelet, as given; a class without them
// registers none (Karpenter's defaults).
func TestKubeletSettingsReachTheClass(t *testing.T) {
	var classes map[string]spec.NodeClass
	require.NoError(t, json.Unmarshal([]byte(`{"default": {"kubelet": {"maxPods": 58, "kubeReserved": {"memory": "1Gi"},
		"evictionSoft": {"memory.available": "500Mi"}, "evictionSoftGracePeriod": {"memory.available": "1m30s"}, "cpuCFSQuota": false}},
		"plain": {}}`), &classes))
	pools, classes := spec.Resolve(nil, classes)
	require.NoError(t, spec.Validate(pools, classes, false, versions.KarpenterMinor(versions.Karpenter)))
	rec := newLayer(t, pools, classes).rec
	classSpec := rec.Get(t, tokens.EC2NodeClass, "eks-demo-nodepools-class-default").Inputs["spec"].ObjectValue().Mappable()
	assert.Equal(t, map[string]any{"maxPods": 58.0, "kubeReserved": map[string]any{"memory": "1Gi"},
		"evictionSoft": map[string]any{"memory.available": "500Mi"}, "evictionSoftGracePeriod": map[string]any{"memory.available": "1m30s"},
		"cpuCFSQuota": false}, classSpec["kubelet"])
	plain := rec.Get(t, tokens.EC2NodeClass, "eks-demo-nodepools-class-plain").Inputs["spec"].ObjectValue().Mappable()
	assert.NotContains(t, plain, "kubelet")
}
