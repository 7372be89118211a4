// Package fakeaws is the AWS account the program's tests run against: a
// VPC to look up, the state AWS gives the resources the program creates
// (ARNs, names, endpoints), and the answers of the lookups it makes (EKS
// add-on versions, public SSM parameters, the clusters that already run).
// The root program's tests and each layer's share it through mock.Recorder.
package fakeaws

import (
	"cmp"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"

	"nodeless-eks/testkit/mock"
	"nodeless-eks/testkit/stackfile"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

const (
	// AccountID and Region are the account's.
	AccountID = "123456789012"
	Region    = "eu-west-1"
	// Issuer is the cluster's OIDC issuer.
	Issuer = "oidc.eks.eu-west-1.amazonaws.com/id/0123456789ABCDEF"
	// Endpoint is the cluster's API server.
	Endpoint = "https://0123456789ABCDEF.gr7.eu-west-1.eks.amazonaws.com"
	// DefaultVpcCniVersion and DefaultCoreDNSVersion are what the fake EKS
	// API calls the default versions of those add-ons.
	DefaultVpcCniVersion  = "v1.19.5-eksbuild.3"
	DefaultCoreDNSVersion = "v1.11.4-eksbuild.14"
	// StandInName is the plain aws:eks/cluster:Cluster that WithEKSStandIn
	// registers so pulumi-eks's eksCluster reference has a resource to name.
	StandInName = "pulumi-eks-child-stand-in"
	// ClusterCreatedAt is when EKS created the cluster.
	ClusterCreatedAt = "2026-12-01T09:00:00Z"
	// Suffix is what the fake engine appends to auto-named resources.
	Suffix = "-7f3a"
)

// availabilityZones are the region's zones, in the order EC2 lists them,
// and their IDs.
var (
	availabilityZones   = []string{Region + "c", Region + "a", Region + "d", Region + "b"}
	availabilityZoneIDs = []string{"euw1-az3", "euw1-az1", "euw1-az4", "euw1-az2"}
)

// DefaultQuota is AWS's default of the VPCs per Region and EC2-VPC Elastic
// IPs quotas (5 each), which the fake account applies unless Quotas says.
const DefaultQuota = 5

// DefaultAddonVersions are the fake EKS API's default add-on versions.
var DefaultAddonVersions = map[string]string{
	"vpc-cni":                   DefaultVpcCniVersion,
	"kube-proxy":                "v1.34.0-eksbuild.2",
	"coredns":                   DefaultCoreDNSVersion,
	"eks-pod-identity-agent":    "v1.3.8-eksbuild.2",
	"eks-node-monitoring-agent": "v1.4.0-eksbuild.1",
	"aws-ebs-csi-driver":        "v1.48.0-eksbuild.2",
	"metrics-server":            "v0.8.0-eksbuild.1",
}

// Subnet is a subnet of the fake VPC.
type Subnet struct{ ID, AZ, Name string }

// Vpc is the VPC the lookups see.
type Vpc struct {
	ID, Name string
	Subnets  []Subnet
	// Tags are its tags besides Name.
	Tags map[string]string
	// Cidr is its primary CIDR; "" is 10.0.0.0/16.
	Cidr string
	// RouteTables are its route tables (not AWS's main one), by ID.
	RouteTables map[string]RouteTable
}

// RouteTable is a route table's tags (its Name among them) and the
// destination CIDRs of its routes.
type RouteTable struct {
	Tags   map[string]string
	Routes []string
}

// DevVpc matches Pulumi.dev.yaml: three AZs, a private and a pod subnet in
// each, and a public subnet that no pattern may pick up.
func DevVpc() Vpc { return VpcNamed("eks-demo-vpc") }

// VpcNamed is DevVpc's shape under another name, as a VPC made by hand is named
// it: subnets "<name>-private-<az>", "<name>-podsubnet-<az>" and
// "<name>-public-<az>".
func VpcNamed(name string) Vpc {
	v := Vpc{ID: "vpc-0de0", Name: name}
	for _, az := range []string{"a", "b", "c"} {
		v.Subnets = append(v.Subnets,
			Subnet{"subnet-private-" + az, Region + az, name + "-private-" + Region + az},
			Subnet{"subnet-pod-" + az, Region + az, name + "-podsubnet-" + Region + az},
			Subnet{"subnet-public-" + az, Region + az, name + "-public-" + Region + az},
		)
	}
	return v
}

// Account is the fake AWS account.
type Account struct {
	Vpc Vpc
	// OtherVpcs are more VPCs of the region, seen by getVpcs and getVpc by
	// ID (a VPC of the name is looked for).
	OtherVpcs []Vpc
	// ClusterName is the name AWS gives the cluster.
	ClusterName string
	// RunningVersion is the Kubernetes version of the cluster that already
	// exists, "" when there is none yet.
	RunningVersion string
	// RunningServiceRoleArn is that cluster's service role; "" gives it
	// the role the program creates ("<ClusterName>-service-..." at "/").
	RunningServiceRoleArn string
	// NoSpotRole leaves the account without the EC2 Spot service-linked role.
	NoSpotRole bool
	// VpcsInRegion and EipsInRegion are how many VPCs and Elastic IPs the
	// region holds besides Vpc and OtherVpcs (the quota checks count them);
	// Quotas are the applied quotas by code, DefaultQuota when unset.
	VpcsInRegion, EipsInRegion int
	Quotas                     map[string]float64
	// QuotasRefused makes Service Quotas refuse every read
	// (AccessDeniedException), as an SCP or a least-privilege policy does.
	QuotasRefused bool
	// OwnEips are the Elastic IPs of EipsInRegion tagged for ClusterName.
	OwnEips int
	// CallerAccount is the account of the default credentials ("" means
	// AccountID): what a lookup or resource without an explicit provider
	// reaches.
	CallerAccount string
	// Others are the other accounts that deploy/'s providers reach (their
	// allowedAccountIds), by ID; an account not here answers as this one.
	Others map[string]*Elsewhere

	mu         sync.Mutex
	standInURN string
	eips       int
}

// Recorder returns a mock engine for stack of project whose resources and
// lookups are the account's, and that runs the transforms of remote
// components on remoteChildren.
func (a *Account) Recorder(project, stack string) *mock.Recorder {
	rec := mock.New(project, stack)
	rec.Children = remoteChildren
	// pulumi-eks names its service role after the component
	// (nodejs/eks/servicerole.ts: "<name>-eksRole" and its "-role").
	rec.ChildNames = map[string]string{"aws:iam/role:Role": "%s-eksRole-role"}
	rec.State = func(reg *mock.Registration) (string, resource.PropertyMap, error) { return a.state(rec, reg) }
	rec.Invoke = func(args pulumi.MockCallArgs) (resource.PropertyMap, error) { return a.invoke(rec, args) }
	return rec
}

// Elsewhere is what deploy/'s lookups see in an account it reaches
// through its account role.
type Elsewhere struct {
	// Roles are the account's roles by name, each with its trust policy.
	Roles map[string]string
	// PulumiOIDC is its api.pulumi.com/oidc provider, nil for none.
	PulumiOIDC *OIDCProvider
	// Refuse makes every lookup in it fail as IAM's AccessDenied does.
	Refuse bool
}

// OIDCProvider is an IAM OIDC provider: its ARN and audiences.
type OIDCProvider struct {
	Arn       string
	ClientIDs []string
}

// caller is the account of the default credentials.
func (a *Account) caller() string {
	if a.CallerAccount != "" {
		return a.CallerAccount
	}
	return AccountID
}

// accountOf is the account a resource or invoke reaches through its
// provider reference ("<urn>::<id>"), and the provider's region ("" for
// the default): the first of an explicit aws provider's
// allowedAccountIds, else the default credentials'.
func (a *Account) accountOf(rec *mock.Recorder, provider string) (account, region string) {
	i := strings.LastIndex(provider, "::") // a URN holds "::" too
	if i < 0 {
		return a.caller(), ""
	}
	p, found := rec.ByURN(provider[:i])
	if !found {
		return a.caller(), ""
	}
	if r, ok := p.Inputs["region"]; ok && r.IsString() {
		region = r.StringValue()
	}
	if ids, ok := p.Inputs["allowedAccountIds"]; ok && ids.IsArray() && len(ids.ArrayValue()) > 0 {
		return ids.ArrayValue()[0].StringValue(), region
	}
	return a.caller(), region
}

// elsewhere answers deploy/'s lookups in another account: its roles and
// their trusts, and its Pulumi Cloud OIDC provider. ok is false for a lookup
// it does not answer, or an account it does not know.
func (a *Account) elsewhere(rec *mock.Recorder, args pulumi.MockCallArgs) (resource.PropertyMap, bool, error) {
	account, region := a.accountOf(rec, args.Provider)
	other, known := a.Others[account]
	if !known {
		return nil, false, nil
	}
	if region == "" {
		region = Region
	}
	if other.Refuse {
		return nil, true, fmt.Errorf("operation error IAM: AccessDenied: User is not authorized to perform %s in account %s", args.Token, account)
	}
	switch args.Token {
	case "aws:iam/getRoles:getRoles":
		if args.Args["pathPrefix"].IsString() { // the program's Spot role lookup
			return spotRoles(account, true, args), true, nil
		}
		names := []resource.PropertyValue{}
		for _, name := range slices.Sorted(maps.Keys(other.Roles)) {
			names = append(names, resource.NewProperty(name))
		}
		return resource.PropertyMap{"names": resource.NewProperty(names)}, true, nil
	case "aws:iam/getRole:getRole":
		name := args.Args["name"].StringValue()
		trust, ok := other.Roles[name]
		if !ok {
			// The Terraform provider's data source on IAM's NoSuchEntity.
			return nil, true, fmt.Errorf("reading IAM Role (%s): couldn't find resource", name)
		}
		return resource.PropertyMap{"name": resource.NewProperty(name), "assumeRolePolicy": resource.NewProperty(trust),
			"arn": resource.NewProperty("arn:aws:iam::" + account + ":role/" + name)}, true, nil
	case "aws:iam/getOpenIdConnectProvider:getOpenIdConnectProvider":
		p := other.PulumiOIDC
		if p == nil || (args.Args["arn"].IsString() && args.Args["arn"].StringValue() != p.Arn) {
			// The Terraform provider's data source: "finding IAM OIDC
			// Provider ...: empty result".
			return nil, true, fmt.Errorf("finding IAM OIDC Provider: empty result")
		}
		ids := []resource.PropertyValue{}
		for _, id := range p.ClientIDs {
			ids = append(ids, resource.NewProperty(id))
		}
		return resource.PropertyMap{"arn": resource.NewProperty(p.Arn), "url": resource.NewProperty("api.pulumi.com/oidc"),
			"clientIdLists": resource.NewProperty(ids)}, true, nil
	}
	return nil, false, nil
}

// remoteChildren are representative children that the engine hands to the
// transforms of a remote component: what pulumi-eks creates for the
// cluster, and what a ConfigGroup creates for a CRD and a Deployment.
var remoteChildren = map[string]map[string]resource.PropertyMap{
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

// state is what AWS answers for a created resource.
func (a *Account) state(rec *mock.Recorder, reg *mock.Registration) (string, resource.PropertyMap, error) {
	id := reg.Name + "-id"
	state := reg.Inputs.Copy()
	account, _ := a.accountOf(rec, reg.Provider)
	switch reg.Type {
	case "aws:eks/cluster:Cluster":
		a.mu.Lock()
		a.standInURN = reg.URN
		a.mu.Unlock()
		state["name"] = resource.NewProperty(a.ClusterName)
		state["arn"] = resource.NewProperty("arn:aws:eks:" + Region + ":" + a.caller() + ":cluster/" + a.ClusterName)
		state["createdAt"] = resource.NewProperty(ClusterCreatedAt)
		state["endpoint"] = resource.NewProperty(Endpoint)
		state["vpcConfig"] = resource.NewProperty(resource.PropertyMap{
			"clusterSecurityGroupId": resource.NewProperty("sg-eks-cluster"),
		})
	case "eks:index:Cluster":
		a.mu.Lock()
		standIn := a.standInURN
		a.mu.Unlock()
		if standIn == "" {
			return "", nil, fmt.Errorf("register %s before the program so eksCluster can reference it (pulumieks.WithStandIn)", StandInName)
		}
		state["eksCluster"] = resource.MakeCustomResourceReference(resource.URN(standIn), resource.ID(StandInName+"-id"), "")
		state["kubeconfigJson"] = resource.NewProperty(`{"apiVersion":"v1","kind":"Config"}`)
		state["oidcIssuer"] = resource.NewProperty(Issuer)
		state["oidcProviderUrl"] = resource.NewProperty("https://" + Issuer)
		state["oidcProviderArn"] = resource.NewProperty("arn:aws:iam::" + AccountID + ":oidc-provider/" + Issuer)
		id = ""
	case "aws:iam/role:Role":
		roleName := reg.Name + Suffix // autonamed unless the program names it
		if n, ok := reg.Inputs["name"]; ok && n.IsString() {
			roleName = n.StringValue()
		}
		state["name"] = resource.NewProperty(roleName)
		state["arn"] = resource.NewProperty("arn:aws:iam::" + account + ":role/" + roleName)
	case "aws:ec2/securityGroup:SecurityGroup":
		id = "sg-" + reg.Name
	case "aws:iam/policy:Policy":
		policyName := reg.Name + Suffix // autonamed unless the program names it
		if n, ok := reg.Inputs["name"]; ok && n.IsString() {
			policyName = n.StringValue()
		}
		state["arn"] = resource.NewProperty("arn:aws:iam::" + account + ":policy/" + policyName)
	case "aws:sqs/queue:Queue":
		state["name"] = resource.NewProperty(reg.Name + Suffix)
		state["arn"] = resource.NewProperty("arn:aws:sqs:" + Region + ":" + AccountID + ":" + reg.Name + Suffix)
		state["url"] = resource.NewProperty("https://sqs." + Region + ".amazonaws.com/" + AccountID + "/" + reg.Name + Suffix)
	case "aws:kms/key:Key":
		state["arn"] = resource.NewProperty("arn:aws:kms:" + Region + ":" + AccountID + ":key/" + reg.Name + "-0000")
	case "aws:cloudwatch/eventRule:EventRule":
		state["name"] = resource.NewProperty(reg.Name + Suffix)
	case "aws:iam/openIdConnectProvider:OpenIdConnectProvider":
		host := strings.TrimPrefix(reg.Inputs["url"].StringValue(), "https://")
		state["arn"] = resource.NewProperty("arn:aws:iam::" + account + ":oidc-provider/" + host)
	case "aws:ec2/vpc:Vpc":
		id = "vpc-" + reg.Name
		state["arn"] = resource.NewProperty("arn:aws:ec2:" + Region + ":" + account + ":vpc/" + id)
	case "aws:ec2/subnet:Subnet":
		id = "subnet-" + reg.Name
	case "aws:iam/serviceLinkedRole:ServiceLinkedRole":
		id = "arn:aws:iam::" + account + ":role/aws-service-role/spot.amazonaws.com/AWSServiceRoleForEC2Spot"
		state["arn"] = resource.NewProperty(id)
		state["name"] = resource.NewProperty("AWSServiceRoleForEC2Spot")
	case "aws:ec2/eip:Eip":
		a.mu.Lock()
		a.eips++
		state["publicIp"] = resource.NewProperty(fmt.Sprintf("52.0.0.%d", a.eips))
		a.mu.Unlock()
	}
	if !reg.Custom {
		id = ""
	}
	return id, state, nil
}

// invoke answers the lookups the program makes.
func (a *Account) invoke(rec *mock.Recorder, args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	if out, answered, err := a.elsewhere(rec, args); answered {
		return out, err
	}
	switch args.Token {
	case "aws:ec2/getVpc:getVpc":
		// By ID, or by the Name filter; more than one match is an error
		// (terraform-provider-aws's aws_vpc data source, "multiple EC2
		// VPCs matched").
		var found []Vpc
		for _, v := range append([]Vpc{a.Vpc}, a.OtherVpcs...) {
			if id, ok := args.Args["id"]; ok && id.IsString() && v.ID == id.StringValue() ||
				!ok && v.ID != "" && filterValue(args.Args, "tag:Name") == v.Name {
				found = append(found, v)
			}
		}
		switch {
		case len(found) == 0:
			return nil, fmt.Errorf("no matching EC2 VPC found")
		case len(found) > 1:
			return nil, fmt.Errorf("multiple EC2 VPCs matched; use additional constraints to reduce matches to a single EC2 VPC")
		}
		v := found[0]
		tags := resource.PropertyMap{"Name": resource.NewProperty(v.Name)}
		for k, val := range v.Tags {
			tags[resource.PropertyKey(k)] = resource.NewProperty(val)
		}
		// Its ARN too (the data source's arn attribute).
		return resource.PropertyMap{"id": resource.NewProperty(v.ID), "tags": resource.NewProperty(tags),
			"arn":       resource.NewProperty("arn:aws:ec2:" + Region + ":" + a.caller() + ":vpc/" + v.ID),
			"cidrBlock": resource.NewProperty(cmp.Or(v.Cidr, "10.0.0.0/16"))}, nil
	case "aws:ec2/getRouteTables:getRouteTables":
		var ids []resource.PropertyValue
		for _, v := range append([]Vpc{a.Vpc}, a.OtherVpcs...) {
			if v.ID != args.Args["vpcId"].StringValue() {
				continue
			}
			for _, id := range slices.Sorted(maps.Keys(v.RouteTables)) {
				if matchesTags(v.RouteTables[id].Tags, args.Args["tags"]) {
					ids = append(ids, resource.NewProperty(id))
				}
			}
		}
		return resource.PropertyMap{"ids": resource.NewProperty(ids)}, nil
	case "aws:ec2/getRouteTable:getRouteTable":
		for _, v := range append([]Vpc{a.Vpc}, a.OtherVpcs...) {
			if t, ok := v.RouteTables[args.Args["routeTableId"].StringValue()]; ok {
				var routes []resource.PropertyValue
				for _, cidr := range t.Routes {
					routes = append(routes, resource.NewProperty(resource.PropertyMap{"cidrBlock": resource.NewProperty(cidr)}))
				}
				return resource.PropertyMap{"routeTableId": args.Args["routeTableId"], "vpcId": resource.NewProperty(v.ID),
					"tags": resource.NewProperty(resource.NewPropertyMapFromMap(toAny(t.Tags))), "routes": resource.NewProperty(routes)}, nil
			}
		}
		return nil, fmt.Errorf("InvalidRouteTableID.NotFound: %s", args.Args["routeTableId"].StringValue())
	case "aws:ec2/getVpcs:getVpcs":
		name := filterValue(args.Args, "tag:Name")
		tags := map[string]string{}
		if t, ok := args.Args["tags"]; ok && t.IsObject() {
			for k, v := range t.ObjectValue() {
				tags[string(k)] = v.StringValue()
			}
		}
		ids := []resource.PropertyValue{}
		for _, v := range append([]Vpc{a.Vpc}, a.OtherVpcs...) {
			matches := v.ID != "" && (name == "" || v.Name == name)
			for k, want := range tags {
				matches = matches && v.Tags[k] == want
			}
			if matches {
				ids = append(ids, resource.NewProperty(v.ID))
			}
		}
		if name == "" && len(tags) == 0 {
			for i := range a.VpcsInRegion {
				ids = append(ids, resource.NewProperty(fmt.Sprintf("vpc-other-%d", i)))
			}
		}
		return resource.PropertyMap{"ids": resource.NewProperty(ids)}, nil
	case "aws:ec2/getEips:getEips":
		n := a.EipsInRegion
		if t, ok := args.Args["tags"]; ok && t.IsObject() && len(t.ObjectValue()) > 0 {
			n = a.OwnEips
		}
		ids := []resource.PropertyValue{}
		for i := range n {
			ids = append(ids, resource.NewProperty(fmt.Sprintf("eipalloc-%d", i)))
		}
		return resource.PropertyMap{"allocationIds": resource.NewProperty(ids)}, nil
	case "aws:servicequotas/getServiceQuota:getServiceQuota":
		code := args.Args["quotaCode"].StringValue()
		if a.QuotasRefused {
			// As the provider wraps Service Quotas' refusal (a JSON
			// protocol: the code is AccessDeniedException).
			return nil, fmt.Errorf("reading Service Quotas Service Quota (%s/%s): operation error Service Quotas: GetServiceQuota, "+
				"https response error StatusCode: 400, RequestID: 1a2b, AccessDeniedException: User is not authorized to perform: "+
				"servicequotas:GetServiceQuota", args.Args["serviceCode"].StringValue(), code)
		}
		value, ok := a.Quotas[code]
		if !ok {
			value = DefaultQuota
		}
		return resource.PropertyMap{"value": resource.NewProperty(value), "defaultValue": resource.NewProperty(float64(DefaultQuota)),
			"quotaCode": resource.NewProperty(code), "serviceCode": args.Args["serviceCode"]}, nil
	case "aws:ec2/getSubnets:getSubnets":
		vpc, ok := a.vpcByID(filterValue(args.Args, "vpc-id"))
		if !ok {
			return nil, fmt.Errorf("getSubnets: missing vpc-id filter")
		}
		pattern := filterValue(args.Args, "tag:Name")
		var ids []resource.PropertyValue
		for _, s := range vpc.Subnets {
			if ok, _ := path.Match(pattern, s.Name); ok {
				ids = append(ids, resource.NewProperty(s.ID))
			}
		}
		return resource.PropertyMap{"ids": resource.NewProperty(ids)}, nil
	case "aws:ec2/getSubnet:getSubnet":
		id := args.Args["id"].StringValue()
		for _, v := range append([]Vpc{a.Vpc}, a.OtherVpcs...) {
			for _, s := range v.Subnets {
				if s.ID == id {
					return resource.PropertyMap{
						"id":               resource.NewProperty(s.ID),
						"availabilityZone": resource.NewProperty(s.AZ),
						"vpcId":            resource.NewProperty(v.ID),
						"tags":             resource.NewProperty(resource.PropertyMap{"Name": resource.NewProperty(s.Name)}),
					}, nil
				}
			}
		}
		return nil, fmt.Errorf("no matching EC2 Subnet found")
	case "aws:eks/getClusters:getClusters":
		names := []resource.PropertyValue{resource.NewProperty("someone-elses-cluster")}
		if a.RunningVersion != "" {
			names = append(names, resource.NewProperty(a.ClusterName))
		}
		return resource.PropertyMap{"names": resource.NewProperty(names)}, nil
	case "aws:eks/getCluster:getCluster":
		if a.RunningVersion == "" || args.Args["name"].StringValue() != a.ClusterName {
			return nil, fmt.Errorf("the program read cluster %v, which getClusters did not list", args.Args["name"])
		}
		role := a.RunningServiceRoleArn
		if role == "" {
			role = "arn:aws:iam::" + AccountID + ":role/" + a.ClusterName + "-service-1a2b3c4"
		}
		return resource.PropertyMap{"name": args.Args["name"], "version": resource.NewProperty(a.RunningVersion),
			"roleArn": resource.NewProperty(role)}, nil
	case "aws:iam/getRoles:getRoles":
		return spotRoles(a.caller(), a.NoSpotRole, args), nil
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
		account, _ := a.accountOf(rec, args.Provider)
		return resource.PropertyMap{"accountId": resource.NewProperty(account),
			"arn": resource.NewProperty("arn:aws:sts::" + account + ":assumed-role/admin/session")}, nil
	case "aws:iam/getOpenIdConnectProvider:getOpenIdConnectProvider":
		return nil, fmt.Errorf("finding IAM OIDC Provider: empty result")
	case "aws:index/getPartition:getPartition":
		return resource.PropertyMap{"partition": resource.NewProperty("aws"), "dnsSuffix": resource.NewProperty("amazonaws.com")}, nil
	case "aws:index/getAvailabilityZones:getAvailabilityZones":
		names, ids := []resource.PropertyValue{}, []resource.PropertyValue{}
		for i, az := range availabilityZones {
			names = append(names, resource.NewProperty(az))
			ids = append(ids, resource.NewProperty(availabilityZoneIDs[i]))
		}
		return resource.PropertyMap{"names": resource.NewProperty(names), "zoneIds": resource.NewProperty(ids)}, nil
	case "aws:eks/getAddonVersion:getAddonVersion":
		version, ok := DefaultAddonVersions[args.Args["addonName"].StringValue()]
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

// vpcByID is the VPC of the account with that ID.
func (a *Account) vpcByID(id string) (Vpc, bool) {
	for _, v := range append([]Vpc{a.Vpc}, a.OtherVpcs...) {
		if v.ID != "" && v.ID == id {
			return v, true
		}
	}
	return Vpc{}, false
}

// spotRoles answers a listing of the Spot service-linked role's path in
// account: the role, unless none.
func spotRoles(account string, none bool, args pulumi.MockCallArgs) resource.PropertyMap {
	names, arns := []resource.PropertyValue{}, []resource.PropertyValue{}
	if !none && args.Args["pathPrefix"].StringValue() == "/aws-service-role/spot.amazonaws.com/" {
		names = append(names, resource.NewProperty("AWSServiceRoleForEC2Spot"))
		arns = append(arns, resource.NewProperty("arn:aws:iam::"+account+":role/aws-service-role/spot.amazonaws.com/AWSServiceRoleForEC2Spot"))
	}
	return resource.PropertyMap{"names": resource.NewProperty(names), "arns": resource.NewProperty(arns)}
}

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

// Registrations are the registrations of rec without the stand-in.
func Registrations(rec *mock.Recorder) []*mock.Registration {
	var out []*mock.Registration
	for _, reg := range rec.All() {
		if reg.Name != StandInName {
			out = append(out, reg)
		}
	}
	return out
}

// RunStackFile runs program as stack of project in a fresh fake account,
// with the configuration the Pulumi CLI reads from Pulumi.yaml and
// stackFile, the keys of set changed ("" deletes one).
func RunStackFile(t testing.TB, project, stack, stackFile string, set map[string]string, program pulumi.RunFunc) (*mock.Recorder, mock.Result) {
	t.Helper()
	return (&Account{}).RunStackFile(t, project, stack, stackFile, set, program)
}

// RunStackFile runs program as stack of project in the account.
func (a *Account) RunStackFile(t testing.TB, project, stack, stackFile string, set map[string]string, program pulumi.RunFunc) (*mock.Recorder, mock.Result) {
	t.Helper()
	rec := a.Recorder(project, stack)
	return rec, rec.Run(t, stackfile.With(t, "Pulumi.yaml", stackFile, set), false, program)
}

// matchesTags reports whether tags hold every tag of filter (an invoke's
// tags argument; none matches all).
func matchesTags(tags map[string]string, filter resource.PropertyValue) bool {
	if !filter.IsObject() {
		return true
	}
	for k, v := range filter.ObjectValue() {
		if tags[string(k)] != v.StringValue() {
			return false
		}
	}
	return true
}

func toAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}
