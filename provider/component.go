package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"nodeless-eks/addons"
	"nodeless-eks/cluster"
	"nodeless-eks/config"
	"nodeless-eks/karpenter"
	"nodeless-eks/nodeless"
	"nodeless-eks/nodepool/spec"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// ClusterArgs are the Cluster's inputs: the stack config keys of the Go
// program (Pulumi.yaml), by the same names, types and defaults (the
// descriptions and defaults come from Pulumi.yaml: inputdocs.go). They are
// plain values, not outputs of other resources: every one is checked, and
// the account read, before anything is registered, as `pulumi preview`
// checks a stack file. aws:region is the consumer's stack config, as for
// its own AWS resources.
type ClusterArgs struct {
	ClusterName                     string                         `pulumi:"clusterName,optional"`
	KubernetesVersion               string                         `pulumi:"kubernetesVersion,optional"`
	SupportType                     string                         `pulumi:"supportType,optional"`
	AllowExtendedSupport            *bool                          `pulumi:"allowExtendedSupport,optional"`
	VpcName                         string                         `pulumi:"vpcName,optional"`
	PrivateSubnetNamePattern        string                         `pulumi:"privateSubnetNamePattern,optional"`
	PodSubnetNamePattern            string                         `pulumi:"podSubnetNamePattern,optional"`
	NatGateways                     string                         `pulumi:"natGateways,optional"`
	VpcCidrBlock                    string                         `pulumi:"vpcCidrBlock,optional"`
	KarpenterVersion                string                         `pulumi:"karpenterVersion,optional"`
	EndpointPublicAccess            *bool                          `pulumi:"endpointPublicAccess,optional"`
	EndpointPrivateAccess           *bool                          `pulumi:"endpointPrivateAccess,optional"`
	PublicAccessCidrs               []string                       `pulumi:"publicAccessCidrs,optional"`
	AddonVersions                   *config.AddonVersions          `pulumi:"addonVersions,optional"`
	CorednsReplicas                 *int                           `pulumi:"corednsReplicas,optional"`
	LoadBalancerControllerVersion   string                         `pulumi:"loadBalancerControllerVersion,optional"`
	Argocd                          *bool                          `pulumi:"argocd,optional"`
	ArgocdVersion                   string                         `pulumi:"argocdVersion,optional"`
	NodePools                       map[string]spec.Pool           `pulumi:"nodePools,optional"`
	NodeClasses                     map[string]spec.NodeClass      `pulumi:"nodeClasses,optional"`
	Production                      *bool                          `pulumi:"production,optional"`
	Tags                            map[string]string              `pulumi:"tags,optional"`
	AccessEntries                   map[string]cluster.AccessEntry `pulumi:"accessEntries,optional"`
	ClusterLogTypes                 []string                       `pulumi:"clusterLogTypes,optional"`
	LogRetentionDays                *int                           `pulumi:"logRetentionDays,optional"`
	KmsKeyArn                       string                         `pulumi:"kmsKeyArn,optional"`
	AllowPublicEndpointFromInternet *bool                          `pulumi:"allowPublicEndpointFromInternet,optional"`
	IamPath                         string                         `pulumi:"iamPath,optional"`
	IamPermissionsBoundary          string                         `pulumi:"iamPermissionsBoundary,optional"`
	ControllerResources             *karpenter.ControllerResources `pulumi:"controllerResources,optional"`
	NodeRepair                      *bool                          `pulumi:"nodeRepair,optional"`
	MetricsServer                   *bool                          `pulumi:"metricsServer,optional"`
	VpcFlowLogs                     *bool                          `pulumi:"vpcFlowLogs,optional"`
	VpcS3Endpoint                   *bool                          `pulumi:"vpcS3Endpoint,optional"`
	VpcEmptyDefaultSecurityGroup    *bool                          `pulumi:"vpcEmptyDefaultSecurityGroup,optional"`
}

// Annotate describes each input as Pulumi.yaml describes its key, with
// its default where the schema can hold one (a primitive).
func (a *ClusterArgs) Annotate(an infer.Annotator) {
	v := reflect.ValueOf(a).Elem()
	for i := range v.NumField() {
		name := fieldName(v.Type().Field(i))
		doc, ok := inputDocs[name]
		if !ok {
			continue // TestInputDocsArePulumiYAMLs fails first
		}
		field := v.Field(i).Addr().Interface()
		an.Describe(field, doc.Description)
		if doc.Default != nil {
			an.SetDefault(field, doc.Default)
		}
	}
}

// Cluster is the component: its outputs are the Go program's stack
// outputs (nodeless.Outputs), by the same names. They are its own fields,
// not an embedded nodeless.Outputs: the SDK reads a component's outputs
// from its direct fields alone (sdk/go/pulumi/provider.NewConstructResult).
type Cluster struct {
	pulumi.ResourceState

	Region                        pulumi.StringOutput      `pulumi:"region"`
	ClusterName                   pulumi.StringOutput      `pulumi:"clusterName"`
	ClusterEndpoint               pulumi.StringOutput      `pulumi:"clusterEndpoint"`
	Kubeconfig                    pulumi.StringOutput      `pulumi:"kubeconfig" provider:"secret"`
	OidcProviderArn               pulumi.StringOutput      `pulumi:"oidcProviderArn"`
	OidcIssuer                    pulumi.StringOutput      `pulumi:"oidcIssuer"`
	ClusterSecurityGroupId        pulumi.StringOutput      `pulumi:"clusterSecurityGroupId"`
	NodeSecurityGroupId           pulumi.StringOutput      `pulumi:"nodeSecurityGroupId"`
	SecretsKeyArn                 pulumi.StringOutput      `pulumi:"secretsKeyArn"`
	LogGroupName                  pulumi.StringOutput      `pulumi:"logGroupName"`
	VpcId                         pulumi.StringOutput      `pulumi:"vpcId"`
	PrivateSubnetIds              pulumi.StringArrayOutput `pulumi:"privateSubnetIds"`
	PodSubnetIds                  pulumi.StringMapOutput   `pulumi:"podSubnetIds"`
	ControllerRoleArn             pulumi.StringOutput      `pulumi:"controllerRoleArn"`
	NodeRoleName                  pulumi.StringOutput      `pulumi:"nodeRoleName"`
	NodeRoleArn                   pulumi.StringOutput      `pulumi:"nodeRoleArn"`
	InterruptionQueueName         pulumi.StringOutput      `pulumi:"interruptionQueueName"`
	KarpenterVersion              pulumi.StringOutput      `pulumi:"karpenterVersion"`
	NodePoolNames                 pulumi.StringArrayOutput `pulumi:"nodePoolNames"`
	CoreDnsVersion                pulumi.StringOutput      `pulumi:"coreDnsVersion"`
	LoadBalancerControllerRoleArn pulumi.StringOutput      `pulumi:"loadBalancerControllerRoleArn"`
	ArgoCdNamespace               pulumi.StringOutput      `pulumi:"argoCdNamespace"`
}

// setOutputs gives c the outputs out, field by field of the same name
// (TestConstructRegistersWhatTheProgramRegisters holds the two lists to
// each other through the Construct's state).
func (c *Cluster) setOutputs(out *nodeless.Outputs) {
	dst, src := reflect.ValueOf(c).Elem(), reflect.ValueOf(out).Elem()
	for i := range src.NumField() {
		dst.FieldByName(src.Type().Field(i).Name).Set(src.Field(i))
	}
}

// Annotate names the component's token and says what it is.
func (c *Cluster) Annotate(a infer.Annotator) {
	a.SetToken("index", "Cluster")
	a.Describe(c, "An EKS cluster with no node groups: one Fargate profile runs Karpenter, which launches every EC2 node "+
		"(CoreDNS, the AWS Load Balancer Controller and ArgoCD included). The same resources as the nodeless-eks Go program, "+
		"from the same inputs as its stack config; deleting it runs the destroy cleanup (DestroyCleanup) first.")
}

// clusterConstructor makes the Cluster's constructor; before, when set,
// runs in the component's context before anything is checked (tests
// register what their mocks need there).
func clusterConstructor(today func() time.Time, before func(ctx *pulumi.Context) error,
	cleanup addons.CleanupRegistrar) infer.ComponentFn[ClusterArgs, *Cluster] {
	return func(ctx *pulumi.Context, name string, args ClusterArgs, opts ...pulumi.ResourceOption) (*Cluster, error) {
		if before != nil {
			if err := before(ctx); err != nil {
				return nil, err
			}
		}
		values, err := args.configValues()
		if err != nil {
			return nil, err
		}
		token := p.GetTypeToken(ctx)
		cfg, err := config.FromInputs(ctx, today(), fmt.Sprintf("invalid inputs of %s %q", token, name), values)
		if err != nil {
			return nil, err
		}
		c := &Cluster{}
		if err := ctx.RegisterComponentResource(token, name, c, opts...); err != nil {
			return nil, err
		}
		out, err := nodeless.Deploy(ctx, cfg, nodeless.Options{Parent: c, DestroyCleanup: cleanup, FargateSettle: fargateSettle})
		if err != nil {
			return nil, err
		}
		c.setOutputs(out)
		return c, nil
	}
}

// fargateSettle is nodeless.Options.FargateSettle: 0, the default, but
// under the tests' mock engine.
var fargateSettle time.Duration

// configValues are the inputs that are set, each as its stack config
// value reads (config.FromInputs): a string as is, a bool or a number as
// text, a list or an object as JSON. An empty list stays an empty list
// ("no requirement"), where encoding/json's omitempty would drop it.
func (a ClusterArgs) configValues() (map[string]string, error) {
	values := map[string]string{}
	v := reflect.ValueOf(a)
	for i := range v.NumField() {
		name, f := fieldName(v.Type().Field(i)), v.Field(i)
		if unset(f) {
			continue
		}
		switch e := reflect.Indirect(f); e.Kind() {
		case reflect.String:
			values[name] = e.String()
		case reflect.Bool:
			values[name] = strconv.FormatBool(e.Bool())
		case reflect.Int:
			values[name] = strconv.FormatInt(e.Int(), 10)
		default:
			raw, err := json.Marshal(plain(f))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			values[name] = string(raw)
		}
	}
	return values, nil
}

// plain is v as JSON values, objects keyed by their pulumi names, with
// what is unset left out and empty lists kept.
func plain(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Pointer:
		return plain(v.Elem())
	case reflect.Struct:
		m := map[string]any{}
		for i := range v.NumField() {
			if f := v.Field(i); !unset(f) {
				m[fieldName(v.Type().Field(i))] = plain(f)
			}
		}
		return m
	case reflect.Map:
		m := map[string]any{}
		for it := v.MapRange(); it.Next(); {
			m[it.Key().String()] = plain(it.Value())
		}
		return m
	case reflect.Slice:
		l := make([]any, v.Len())
		for i := range l {
			l[i] = plain(v.Index(i))
		}
		return l
	}
	return v.Interface()
}

// unset is a nil pointer, list or map, or a zero string or number: what
// the JSON of a stack config value would leave out.
func unset(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		return v.IsNil()
	}
	return v.IsZero()
}

func fieldName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("pulumi"), ",")
	return name
}

// unknownFields refuses, naming each by its path, the inputs or fields of
// their objects that ClusterArgs and its types do not have (in the words
// config uses for a stack file's unknown object key), values that are not
// plain (outputs, secrets, unknowns) and fractions where a whole number
// goes: what the typed copy of the inputs would drop or refuse in the
// SDK's words.
func unknownFields(name string, inputs property.Map) error {
	var unknown []string
	checkFields(reflect.TypeFor[ClusterArgs](), inputs, "", &unknown)
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	errs := make([]error, len(unknown))
	for i, u := range unknown {
		errs[i] = errors.New(u)
	}
	return fmt.Errorf("invalid inputs of %s:index:Cluster %q:\n%w", Name, name, errors.Join(errs...))
}

func checkFields(typ reflect.Type, m property.Map, path string, unknown *[]string) {
	fields := map[string]reflect.Type{}
	for i := range typ.NumField() {
		fields[fieldName(typ.Field(i))] = typ.Field(i).Type
	}
	for key, v := range m.All {
		ft, ok := fields[key]
		if !ok {
			if path == "" {
				*unknown = append(*unknown, fmt.Sprintf("%s: not an input (want one of %s)", key, strings.Join(config.InputNames(), ", ")))
			} else {
				*unknown = append(*unknown, fmt.Sprintf("%s: unknown field %q", path, key))
			}
			continue
		}
		checkValue(ft, v, join(path, key), unknown)
	}
}

func checkValue(typ reflect.Type, v property.Value, path string, unknown *[]string) {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch {
	case v.IsComputed() || v.Secret() || len(v.Dependencies()) > 0:
		// The SDK's typed copy would refuse it with its own words.
		*unknown = append(*unknown, fmt.Sprintf("%s: an output of another resource or a secret; the Cluster takes plain "+
			"values, checked before anything is registered: pass the value itself", path))
	case typ.Kind() == reflect.Int && v.IsNumber() && v.AsNumber() != math.Trunc(v.AsNumber()):
		// The typed copy would drop the fraction; a stack file refuses it.
		*unknown = append(*unknown, fmt.Sprintf("%s: %v: want a whole number", path, v.AsNumber()))
	case typ.Kind() == reflect.Struct && v.IsMap():
		checkFields(typ, v.AsMap(), path, unknown)
	case typ.Kind() == reflect.Map && v.IsMap():
		for key, e := range v.AsMap().All {
			checkValue(typ.Elem(), e, join(path, key), unknown)
		}
	case typ.Kind() == reflect.Slice && v.IsArray():
		for i, e := range v.AsArray().All {
			checkValue(typ.Elem(), e, fmt.Sprintf("%s[%d]", path, i), unknown)
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
