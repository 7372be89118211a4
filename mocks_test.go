package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"nodeless-eks/internal/bootwatch"

	awseks "github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
)

// testToday is the day the tests read the EKS support calendar against, so
// that they do not change as real days pass.
var testToday = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) {
	today = func() time.Time { return testToday }
	// Mocked stacks have no cluster to watch; watch_test.go gives one.
	bootAPI = func(string) (bootwatch.API, error) { return nil, errors.New("no cluster under mocks") }
	os.Exit(m.Run())
}

const (
	// exportTimeout bounds the wait for a stack output under mocks; they
	// resolve in milliseconds unless a registration failed.
	exportTimeout = 20 * time.Second
	testProject   = "nodeless-eks"
	testStack     = "dev"
	testAccount   = "123456789012"
	// defaultVpcCniVersion is what the fake EKS API calls the default
	// vpc-cni version for any Kubernetes version.
	defaultVpcCniVersion  = "v1.19.5-eksbuild.3"
	defaultCoreDNSVersion = "v1.11.4-eksbuild.14"
	// eksStandInName is the plain aws:eks/cluster:Cluster that the test
	// registers so pulumi-eks's eksCluster reference has a resource to name.
	eksStandInName = "pulumi-eks-child-stand-in"
)

// defaultAddonVersions are the fake EKS API's default add-on versions.
var defaultAddonVersions = map[string]string{
	"vpc-cni":                   defaultVpcCniVersion,
	"kube-proxy":                "v1.34.0-eksbuild.2",
	"coredns":                   defaultCoreDNSVersion,
	"eks-pod-identity-agent":    "v1.3.8-eksbuild.2",
	"eks-node-monitoring-agent": "v1.4.0-eksbuild.1",
	"aws-ebs-csi-driver":        "v1.48.0-eksbuild.2",
	"metrics-server":            "v0.8.0-eksbuild.1",
}

// fakeSubnet is a subnet of the fake VPC.
type fakeSubnet struct{ ID, AZ, Name string }

// fakeVpc is the AWS account the lookups see.
type fakeVpc struct {
	ID, Name string
	Subnets  []fakeSubnet
}

// devVpc matches Pulumi.dev.yaml: three AZs, a private and a pod subnet in
// each, and a public subnet that no pattern may pick up.
func devVpc() fakeVpc {
	v := fakeVpc{ID: "vpc-0de0", Name: "eks-demo-vpc"}
	for _, az := range []string{"a", "b", "c"} {
		v.Subnets = append(v.Subnets,
			fakeSubnet{"subnet-private-" + az, "eu-west-1" + az, "eks-demo-vpc-private-eu-west-1" + az},
			fakeSubnet{"subnet-pod-" + az, "eu-west-1" + az, "eks-demo-vpc-podsubnet-eu-west-1" + az},
			fakeSubnet{"subnet-public-" + az, "eu-west-1" + az, "eks-demo-vpc-public-eu-west-1" + az},
		)
	}
	return v
}

// registration is one RegisterResource call as the engine would see it.
type registration struct {
	Type, Name, URN string
	Custom, Remote  bool
	Inputs          resource.PropertyMap
	Parent          string
	Dependencies    []string
	Provider        string
	// CreateTimeout, UpdateTimeout and DeleteTimeout are the custom
	// timeouts, "" where none is set.
	CreateTimeout, UpdateTimeout, DeleteTimeout string
	// Protect is the protect option; Transforms counts transform callbacks.
	Protect    bool
	Transforms int
	// Aliases are the names of the alias specs the resource carries.
	Aliases []string
	// Transformed is what the resource's transforms make of the children
	// that a remote component creates (see childrenOf), by child type.
	Transformed map[string]transformed
	canonical   json.RawMessage
}

// transformed is a child's inputs and protect option after the
// registration's transforms ran on them, as the engine would run them.
type transformed struct {
	Props   resource.PropertyMap
	Protect bool
	// Unchanged is true when no transform returned a result.
	Unchanged bool
}

// childrenOf are representative children that the engine hands to the
// transforms of a remote component: what pulumi-eks creates for the
// cluster, and what a ConfigGroup creates for a CRD and a Deployment.
var childrenOf = map[string]map[string]resource.PropertyMap{
	"eks:index:Cluster": {
		"aws:eks/cluster:Cluster": {"name": resource.NewProperty("c"), "version": resource.NewProperty("1.36")},
		"aws:iam/role:Role":       {"assumeRolePolicy": resource.NewProperty("{}")},
	},
	"kubernetes:yaml/v2:ConfigGroup": {
		"kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition": {
			"apiVersion": resource.NewProperty("apiextensions.k8s.io/v1"),
			"kind":       resource.NewProperty("CustomResourceDefinition"),
			"metadata": resource.NewProperty(resource.PropertyMap{
				"name":        resource.NewProperty("targetgroupbindings.elbv2.k8s.aws"),
				"annotations": resource.NewProperty(resource.PropertyMap{"controller-gen.kubebuilder.io/version": resource.NewProperty("v0.16.5")}),
			}),
			"spec": resource.NewProperty(resource.PropertyMap{"group": resource.NewProperty("elbv2.k8s.aws")}),
		},
		"kubernetes:apps/v1:Deployment": {"metadata": resource.NewProperty(resource.PropertyMap{"name": resource.NewProperty("x")})},
	},
}

// runTransforms calls each transform callback of a registration the way
// the engine does for a remote component's child: through the SDK's
// callback server, with a TransformRequest, feeding each result to the next.
func runTransforms(callbacks []*pulumirpc.Callback, parentURN, typ string, props resource.PropertyMap) (transformed, error) {
	out := transformed{Props: props, Unchanged: true}
	for _, cb := range callbacks {
		conn, err := grpc.NewClient(cb.GetTarget(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return out, err
		}
		defer conn.Close()
		args, err := plugin.MarshalProperties(out.Props, plugin.MarshalOptions{KeepUnknowns: true, KeepSecrets: true, KeepResources: true})
		if err != nil {
			return out, err
		}
		req, err := proto.Marshal(&pulumirpc.TransformRequest{
			Type: typ, Name: "child", Custom: true, Parent: parentURN, Properties: args,
			Options: &pulumirpc.TransformResourceOptions{Protect: proto.Bool(out.Protect)},
		})
		if err != nil {
			return out, err
		}
		resp, err := pulumirpc.NewCallbacksClient(conn).Invoke(context.Background(), &pulumirpc.CallbackInvokeRequest{Token: cb.GetToken(), Request: req})
		if err != nil {
			return out, err
		}
		var tr pulumirpc.TransformResponse
		if err := proto.Unmarshal(resp.GetResponse(), &tr); err != nil {
			return out, err
		}
		if tr.GetProperties() == nil && tr.GetOptions() == nil {
			continue // the transform left this child alone
		}
		out.Unchanged = false
		if out.Props, err = plugin.UnmarshalProperties(tr.GetProperties(), plugin.MarshalOptions{KeepUnknowns: true, KeepSecrets: true}); err != nil {
			return out, err
		}
		out.Protect = tr.GetOptions().GetProtect()
	}
	return out, nil
}

// invocation is one invoke as the engine would see it.
type invocation struct {
	Token string
	Args  resource.PropertyMap
}

// recorder is a pulumi mock that records every registration and invoke and
// answers lookups from a fake VPC.
type recorder struct {
	vpc         fakeVpc
	clusterName string
	// runningVersion is the Kubernetes version of the cluster that
	// already exists, "" when there is none yet.
	runningVersion string
	// noSpotRole leaves the account without the EC2 Spot service-linked role.
	noSpotRole bool
	// hold delays the creation of the named resources until their channel
	// closes, as a slow step of a real `pulumi up` does.
	hold map[string]chan struct{}

	mu          sync.Mutex
	byKey       map[string]*registration // "type::name"
	byURN       map[string]*registration
	order       []*registration
	invocations []invocation
	standInURN  string
}

func newRecorder(vpc fakeVpc, clusterName string) *recorder {
	return &recorder{vpc: vpc, clusterName: clusterName,
		byKey: map[string]*registration{}, byURN: map[string]*registration{}}
}

func (r *recorder) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	if ch, ok := r.hold[args.Name]; ok {
		select {
		case <-ch:
		case <-time.After(exportTimeout):
		}
	}
	reg := &registration{Type: args.TypeToken, Name: args.Name, Custom: args.Custom, Inputs: args.Inputs, Provider: args.Provider}
	if rpc := args.RegisterRPC; rpc != nil {
		reg.Parent = rpc.GetParent()
		reg.Dependencies = rpc.GetDependencies()
		reg.Remote = rpc.GetRemote()
		reg.CreateTimeout = rpc.GetCustomTimeouts().GetCreate()
		reg.UpdateTimeout = rpc.GetCustomTimeouts().GetUpdate()
		reg.DeleteTimeout = rpc.GetCustomTimeouts().GetDelete()
		reg.Protect = rpc.GetProtect()
		reg.Transforms = len(rpc.GetTransforms())
		for _, a := range rpc.GetAliases() {
			if spec := a.GetSpec(); spec != nil {
				reg.Aliases = append(reg.Aliases, spec.GetName())
			}
		}
	}
	reg.URN = mockURN(reg.Parent, reg.Type, reg.Name)
	if children, ok := childrenOf[reg.Type]; ok && reg.Transforms > 0 {
		reg.Transformed = map[string]transformed{}
		for typ, props := range children {
			got, err := runTransforms(args.RegisterRPC.GetTransforms(), reg.URN, typ, props.Copy())
			if err != nil {
				return "", nil, fmt.Errorf("running the transforms of %s on a %s: %w", reg.Name, typ, err)
			}
			reg.Transformed[typ] = got
		}
	}

	if args.RegisterRPC != nil {
		var tr any
		if reg.Transformed != nil {
			m := map[string]any{}
			for k, v := range reg.Transformed {
				m[k] = map[string]any{"props": v.Props.Mappable(), "protect": v.Protect, "unchanged": v.Unchanged}
			}
			tr = m
		}
		reg.canonical = canonicalRPC(args.RegisterRPC, tr)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byKey[reg.Type+"::"+reg.Name] = reg
	r.byURN[reg.URN] = reg
	r.order = append(r.order, reg)

	id := args.Name + "-id"
	state := args.Inputs.Copy()
	switch args.TypeToken {
	case "aws:eks/cluster:Cluster":
		r.standInURN = reg.URN
		state["name"] = resource.NewProperty(r.clusterName)
		state["arn"] = resource.NewProperty("arn:aws:eks:eu-west-1:" + testAccount + ":cluster/" + r.clusterName)
		state["endpoint"] = resource.NewProperty("https://0123456789ABCDEF.gr7.eu-west-1.eks.amazonaws.com")
		state["vpcConfig"] = resource.NewProperty(resource.PropertyMap{
			"clusterSecurityGroupId": resource.NewProperty("sg-eks-cluster"),
		})
	case "eks:index:Cluster":
		if r.standInURN == "" {
			return "", nil, fmt.Errorf("register %s before the program so eksCluster can reference it", eksStandInName)
		}
		issuer := "oidc.eks.eu-west-1.amazonaws.com/id/0123456789ABCDEF"
		state["eksCluster"] = resource.MakeCustomResourceReference(resource.URN(r.standInURN), resource.ID(eksStandInName+"-id"), "")
		state["kubeconfigJson"] = resource.NewProperty(`{"apiVersion":"v1","kind":"Config"}`)
		state["oidcIssuer"] = resource.NewProperty(issuer)
		state["oidcProviderUrl"] = resource.NewProperty("https://" + issuer)
		state["oidcProviderArn"] = resource.NewProperty("arn:aws:iam::" + testAccount + ":oidc-provider/" + issuer)
		id = ""
	case "aws:iam/role:Role":
		roleName := args.Name + "-7f3a" // autonamed unless the program names it
		if n, ok := args.Inputs["name"]; ok && n.IsString() {
			roleName = n.StringValue()
		}
		state["name"] = resource.NewProperty(roleName)
		state["arn"] = resource.NewProperty("arn:aws:iam::" + testAccount + ":role/" + roleName)
	case "aws:ec2/securityGroup:SecurityGroup":
		id = "sg-" + args.Name
	case "aws:iam/policy:Policy":
		state["arn"] = resource.NewProperty("arn:aws:iam::" + testAccount + ":policy/" + args.Name + "-7f3a")
	case "aws:sqs/queue:Queue":
		state["name"] = resource.NewProperty(args.Name + "-7f3a")
		state["arn"] = resource.NewProperty("arn:aws:sqs:eu-west-1:" + testAccount + ":" + args.Name + "-7f3a")
		state["url"] = resource.NewProperty("https://sqs.eu-west-1.amazonaws.com/" + testAccount + "/" + args.Name + "-7f3a")
	case "aws:kms/key:Key":
		state["arn"] = resource.NewProperty("arn:aws:kms:eu-west-1:" + testAccount + ":key/" + args.Name + "-0000")
	case "aws:cloudwatch/eventRule:EventRule":
		state["name"] = resource.NewProperty(args.Name + "-7f3a")
	}
	if !args.Custom {
		id = ""
	}
	return id, state, nil
}

func (r *recorder) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	r.mu.Lock()
	r.invocations = append(r.invocations, invocation{Token: args.Token, Args: args.Args})
	r.mu.Unlock()

	switch args.Token {
	case "aws:ec2/getVpc:getVpc":
		if filterValue(args.Args, "tag:Name") != r.vpc.Name {
			return nil, fmt.Errorf("no matching EC2 VPC found")
		}
		return resource.PropertyMap{"id": resource.NewProperty(r.vpc.ID)}, nil
	case "aws:ec2/getSubnets:getSubnets":
		if filterValue(args.Args, "vpc-id") != r.vpc.ID {
			return nil, fmt.Errorf("getSubnets: missing vpc-id filter")
		}
		pattern := filterValue(args.Args, "tag:Name")
		var ids []resource.PropertyValue
		for _, s := range r.vpc.Subnets {
			if ok, _ := path.Match(pattern, s.Name); ok {
				ids = append(ids, resource.NewProperty(s.ID))
			}
		}
		return resource.PropertyMap{"ids": resource.NewProperty(ids)}, nil
	case "aws:ec2/getSubnet:getSubnet":
		id := args.Args["id"].StringValue()
		for _, s := range r.vpc.Subnets {
			if s.ID == id {
				return resource.PropertyMap{
					"id":               resource.NewProperty(s.ID),
					"availabilityZone": resource.NewProperty(s.AZ),
					"vpcId":            resource.NewProperty(r.vpc.ID),
					"tags":             resource.NewProperty(resource.PropertyMap{"Name": resource.NewProperty(s.Name)}),
				}, nil
			}
		}
		return nil, fmt.Errorf("no matching EC2 Subnet found")
	case "aws:eks/getClusters:getClusters":
		names := []resource.PropertyValue{resource.NewProperty("someone-elses-cluster")}
		if r.runningVersion != "" {
			names = append(names, resource.NewProperty(r.clusterName))
		}
		return resource.PropertyMap{"names": resource.NewProperty(names)}, nil
	case "aws:eks/getCluster:getCluster":
		if r.runningVersion == "" || args.Args["name"].StringValue() != r.clusterName {
			return nil, fmt.Errorf("the program read cluster %v, which getClusters did not list", args.Args["name"])
		}
		return resource.PropertyMap{"name": args.Args["name"], "version": resource.NewProperty(r.runningVersion)}, nil
	case "aws:iam/getRoles:getRoles":
		var names []resource.PropertyValue
		if !r.noSpotRole && args.Args["pathPrefix"].StringValue() == "/aws-service-role/spot.amazonaws.com/" {
			names = append(names, resource.NewProperty("AWSServiceRoleForEC2Spot"))
		}
		return resource.PropertyMap{"names": resource.NewProperty(names)}, nil
	case "aws:ssm/getParametersByPath:getParametersByPath":
		dir := args.Args["path"].StringValue()
		var names []resource.PropertyValue
		for _, p := range publishedParameters {
			if path.Dir(p) == dir {
				names = append(names, resource.NewProperty(p))
			}
		}
		return resource.PropertyMap{"names": resource.NewProperty(names)}, nil
	case "aws:index/getCallerIdentity:getCallerIdentity":
		return resource.PropertyMap{"accountId": resource.NewProperty(testAccount)}, nil
	case "aws:index/getPartition:getPartition":
		return resource.PropertyMap{"partition": resource.NewProperty("aws"), "dnsSuffix": resource.NewProperty("amazonaws.com")}, nil
	case "aws:eks/getAddonVersion:getAddonVersion":
		version, ok := defaultAddonVersions[args.Args["addonName"].StringValue()]
		if !ok {
			return nil, fmt.Errorf("no add-on %v", args.Args["addonName"])
		}
		return resource.PropertyMap{"version": resource.NewProperty(version)}, nil
	}
	return nil, fmt.Errorf("unexpected invoke %s", args.Token)
}

// publishedParameters are the public SSM parameters of the fake region:
// Bottlerocket 1.61.0 (the first with Kubernetes 1.36) and 1.66.0 for both
// architectures, 1.64.0 for x86_64 only, and one AL2023 release.
var publishedParameters = func() []string {
	var out []string
	for _, minor := range []int{34, 35, 36} {
		for _, arch := range []string{"x86_64", "arm64"} {
			for _, v := range []string{"1.61.0", "1.66.0"} {
				out = append(out, fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-1.%d/%s/%s/image_id", minor, arch, v))
			}
		}
		out = append(out, fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-1.%d/x86_64/1.64.0/image_id", minor),
			fmt.Sprintf("/aws/service/eks/optimized-ami/1.%d/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.%d-v20261120/image_id", minor, minor))
	}
	return out
}()

// filterValue returns the first value of the EC2 filter called name.
func filterValue(args resource.PropertyMap, name string) string {
	filters, ok := args["filters"]
	if !ok || !filters.IsArray() {
		return ""
	}
	for _, f := range filters.ArrayValue() {
		if f.ObjectValue()["name"].StringValue() == name {
			return f.ObjectValue()["values"].ArrayValue()[0].StringValue()
		}
	}
	return ""
}

// mockURN is the URN the mock monitor gives a resource.
func mockURN(parent, typ, name string) string {
	parentType := tokens.Type("")
	if p := resource.URN(parent); p != "" && p.QualifiedType() != resource.RootStackType {
		parentType = p.QualifiedType()
	}
	return string(resource.NewURN(tokens.QName(testStack), tokens.PackageName(testProject), parentType, tokens.Type(typ), name))
}

// get returns the registration of type::name, failing the test if absent.
func (r *recorder) get(t *testing.T, typ, name string) *registration {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	reg, ok := r.byKey[typ+"::"+name]
	require.Truef(t, ok, "no %s named %q was registered; registered: %s", typ, name, r.keysLocked())
	return reg
}

// ofType returns the registrations of a type in registration order.
func (r *recorder) ofType(typ string) []*registration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*registration
	for _, reg := range r.order {
		if reg.Type == typ {
			out = append(out, reg)
		}
	}
	return out
}

// programRegistrations excludes the test's own stand-in resource.
func (r *recorder) programRegistrations() []*registration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*registration
	for _, reg := range r.order {
		if reg.Name != eksStandInName {
			out = append(out, reg)
		}
	}
	return out
}

func (r *recorder) keysLocked() string {
	keys := make([]string, 0, len(r.byKey))
	for k := range r.byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

// edges are the URNs a registration waits for: its dependencies and its
// provider (the engine creates a resource only after its provider).
func (reg *registration) edges() []string {
	out := append([]string(nil), reg.Dependencies...)
	// A provider reference is "<urn>::<id>".
	if i := strings.LastIndex(reg.Provider, "::"); i > 0 {
		out = append(out, reg.Provider[:i])
	}
	return out
}

// dependsOn reports whether from reaches to through registered
// dependencies and providers, transitively.
func (r *recorder) dependsOn(from, to *registration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	stack := from.edges()
	for len(stack) > 0 {
		urn := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if urn == to.URN {
			return true
		}
		if seen[urn] {
			continue
		}
		seen[urn] = true
		if reg, ok := r.byURN[urn]; ok {
			stack = append(stack, reg.edges()...)
		}
	}
	return false
}

// requireDependsOn fails unless from depends on to, directly or not.
func requireDependsOn(t *testing.T, r *recorder, from, to *registration) {
	t.Helper()
	require.Truef(t, r.dependsOn(from, to), "%s::%s must depend on %s::%s; its direct dependencies: %v",
		from.Type, from.Name, to.Type, to.Name, from.Dependencies)
}

// requireNotDependsOn fails if from depends on to, directly or not.
func requireNotDependsOn(t *testing.T, r *recorder, from, to *registration) {
	t.Helper()
	require.Falsef(t, r.dependsOn(from, to), "%s::%s must not depend on %s::%s", from.Type, from.Name, to.Type, to.Name)
}

// stackRun is the outcome of running the real program under mocks.
type stackRun struct {
	rec *recorder
	// exports holds each stack output's resolved value.
	exports map[string]any
	// secretExports holds the names of the secret stack outputs.
	secretExports map[string]bool
	err           error
}

// runProgram runs program with cfg as the stack configuration (keys as in
// a stack file, objects and arrays as JSON) against vpc.
func runProgram(t *testing.T, cfg map[string]string, vpc fakeVpc) stackRun {
	t.Helper()
	return runProgramOn(t, cfg, vpc, "")
}

// runProgramOn is runProgram against a cluster that already runs
// runningVersion ("" for none).
func runProgramOn(t *testing.T, cfg map[string]string, vpc fakeVpc, runningVersion string) stackRun {
	t.Helper()
	rec := newRecorder(vpc, cfg[testProject+":clusterName"])
	rec.runningVersion = runningVersion
	return runStack(t, cfg, rec, false)
}

// runStack runs program with cfg against rec, as `pulumi up` runs it or,
// with preview, as a preview does.
func runStack(t *testing.T, cfg map[string]string, rec *recorder, preview bool) stackRun {
	t.Helper()
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	t.Setenv(pulumi.EnvConfig, string(raw))

	run := stackRun{rec: rec}
	run.err = pulumi.RunErr(func(ctx *pulumi.Context) error {
		// pulumi-eks returns its aws:eks/cluster:Cluster child as a resource
		// reference; the mock monitor can resolve only URNs it has seen.
		// Registration is asynchronous, so wait until the mock has it:
		// otherwise pulumi-eks's registration can overtake it and fail.
		standIn, err := awseks.NewCluster(ctx, eksStandInName, &awseks.ClusterArgs{
			RoleArn:   pulumi.String("arn:aws:iam::" + testAccount + ":role/stand-in"),
			VpcConfig: awseks.ClusterVpcConfigArgs{},
		})
		if err != nil {
			return err
		}
		registered := make(chan struct{})
		standIn.URN().ApplyT(func(string) error { close(registered); return nil })
		select {
		case <-registered:
		case <-time.After(exportTimeout):
			return fmt.Errorf("the mock never registered %s", eksStandInName)
		}
		if err := program(ctx); err != nil {
			return err
		}
		// Resolve every export before the run ends: an output that no
		// resource produced is not awaited by the run itself. An output
		// that fails never calls its apply, hence the timeout.
		run.exports, run.secretExports = map[string]any{}, map[string]bool{}
		var mu sync.Mutex
		pending := map[string]bool{}
		done := make(chan struct{})
		for name, value := range ctx.GetCurrentExportMap() {
			out, ok := value.(pulumi.Output)
			if !ok {
				return fmt.Errorf("export %s is not an output", name)
			}
			run.secretExports[name] = pulumi.IsSecret(out)
			pending[name] = true
		}
		if len(pending) == 0 {
			return nil
		}
		for name, value := range ctx.GetCurrentExportMap() {
			value.(pulumi.Output).ApplyT(func(v any) any {
				mu.Lock()
				defer mu.Unlock()
				run.exports[name] = v
				delete(pending, name)
				if len(pending) == 0 {
					close(done)
				}
				return v
			})
		}
		select {
		case <-done:
			return nil
		case <-time.After(exportTimeout):
			mu.Lock()
			defer mu.Unlock()
			return fmt.Errorf("stack outputs never resolved: %v", slices.Sorted(maps.Keys(pending)))
		}
	}, pulumi.WithMocks(testProject, testStack, rec), func(info *pulumi.RunInfo) { info.DryRun = preview })
	return run
}
