package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"nodeless-eks/config"
	"nodeless-eks/internal/bootwatch"
	"nodeless-eks/internal/cleanup"
	"nodeless-eks/nodeless"
	"nodeless-eks/nodepool/spec"
	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/fakeaws/pulumieks"
	"nodeless-eks/testkit/mock"
	"nodeless-eks/testkit/stackfile"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pconfig "github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite schema.json and inputdocs.go")

// testToday is the root tests' day, so that both read the EKS support
// calendar alike.
var testToday = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

const (
	testProject = "nodeless-eks"
	testStack   = "dev"
	// The in-process test server's monitor names every URN after this
	// project and stack (integration/fake/monitor.go at v1.5.0); the
	// Recorder is made with the same, so that the URNs it resolves are
	// the ones the SDK holds. Normalization maps them to the program's.
	monitorProject = "project"
	monitorStack   = "stack"
	projectFile    = "../Pulumi.yaml"
)

// server is the provider under pulumi-go-provider's in-process test server,
// with rec as its engine; the Cluster's constructor first registers the
// pulumi-eks stand-in the fake account needs, as the root tests do.
func server(t *testing.T, rec *mock.Recorder) integration.Server {
	t.Helper()
	standIn := pulumieks.WithStandIn(func(*pulumi.Context) error { return nil })
	prov, err := build(func() time.Time { return testToday }, standIn)
	require.NoError(t, err)
	s, err := integration.NewServer(t.Context(), Name, semver.MustParse(version),
		integration.WithProvider(prov), integration.WithMocks(rec))
	require.NoError(t, err)
	return s
}

func schemaJSON(t *testing.T) []byte {
	t.Helper()
	prov, err := Provider(time.Now)
	require.NoError(t, err)
	s, err := integration.NewServer(t.Context(), Name, semver.MustParse(version), integration.WithProvider(prov))
	require.NoError(t, err)
	resp, err := s.GetSchema(p.GetSchemaRequest{})
	require.NoError(t, err)
	var v any
	require.NoError(t, json.Unmarshal([]byte(resp.Schema), &v))
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	return buf.Bytes()
}

// TestSchemaGolden holds the schema the provider serves, which consumers'
// SDKs are generated from, to schema.json: a change shows as its diff.
func TestSchemaGolden(t *testing.T) {
	got := schemaJSON(t)
	if *update {
		require.NoError(t, os.WriteFile("schema.json", got, 0o644))
		return
	}
	want, err := os.ReadFile("schema.json")
	require.NoError(t, err, "run go test -run TestSchemaGolden -update")
	require.Equal(t, string(want), string(got), "the schema changed: review the diff and run go test -run TestSchemaGolden -update")
}

// TestInputsAreTheStackConfigKeys: the Cluster's inputs are the program's
// keys (config.InputNames), each of the type Pulumi.yaml declares, and
// required where Pulumi.yaml gives no default.
func TestInputsAreTheStackConfigKeys(t *testing.T) {
	var sch struct {
		Resources map[string]struct {
			InputProperties map[string]struct {
				Type  string `json:"type"`
				Ref   string `json:"$ref"`
				Plain bool   `json:"plain"`
			} `json:"inputProperties"`
			RequiredInputs []string `json:"requiredInputs"`
		} `json:"resources"`
	}
	require.NoError(t, json.Unmarshal(schemaJSON(t), &sch))
	cluster, ok := sch.Resources[Name+":index:Cluster"]
	require.True(t, ok, "the schema has the Cluster")
	proj, err := workspace.LoadProject(projectFile)
	require.NoError(t, err)

	var inputs []string
	for name := range cluster.InputProperties {
		inputs = append(inputs, name)
	}
	want := config.InputNames()
	sort.Strings(inputs)
	sort.Strings(want)
	require.Equal(t, want, inputs)

	var required []string
	for _, name := range want {
		key := proj.Config[name]
		in := cluster.InputProperties[name]
		typ := in.Type
		if in.Ref != "" {
			typ = "object"
		}
		assert.Equal(t, typeOf(key), typ, "%s: Pulumi.yaml's type", name)
		if typ != "object" && typ != "array" { // infer marks their items plain
			assert.True(t, in.Plain, "%s is plain: checked before anything is registered", name)
		}
		if key.Default == nil {
			required = append(required, name)
		}
	}
	sort.Strings(cluster.RequiredInputs)
	assert.Equal(t, required, cluster.RequiredInputs)
}

// TestInputDocsArePulumiYAMLs holds inputdocs.go to Pulumi.yaml's
// descriptions and primitive defaults.
func TestInputDocsArePulumiYAMLs(t *testing.T) {
	proj, err := workspace.LoadProject(projectFile)
	require.NoError(t, err)
	var names []string
	for name := range proj.Config {
		if !strings.Contains(name, ":") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("// Code generated by TestInputDocsArePulumiYAMLs -update from ../Pulumi.yaml; DO NOT EDIT.\n\n")
	b.WriteString("package main\n\n// inputDoc is a Cluster input's description and schema default.\ntype inputDoc struct {\n\tDescription string\n\tDefault     any\n}\n\n")
	b.WriteString("var inputDocs = map[string]inputDoc{\n")
	for _, name := range names {
		key := proj.Config[name]
		def := "nil"
		switch d := key.Default.(type) {
		case string:
			if d != "" { // "" means "computed": the schema shows no default
				def = strconv.Quote(d)
			}
		case bool:
			def = strconv.FormatBool(d)
		case int:
			def = strconv.Itoa(d)
		}
		fmt.Fprintf(&b, "\t%q: {Description: %q, Default: %s},\n", name, consumerDoc(key.Description), def)
	}
	b.WriteString("}\n")
	got, _ := os.ReadFile("inputdocs.go")
	want, err := format.Source([]byte(b.String()))
	require.NoError(t, err)
	if *update {
		require.NoError(t, os.WriteFile("inputdocs.go", want, 0o644))
		return
	}
	require.Equal(t, string(want), string(got), "Pulumi.yaml's keys changed: run go test -run TestInputDocsArePulumiYAMLs -update")
}

// TestNestedInputTagsAreTheJSONOnes: the layer types a Cluster's objects
// are made of carry pulumi tags beside the json tags the stack config
// decodes with; the two name every field alike and agree on what is
// optional, so an object input reads as its config value.
func TestNestedInputTagsAreTheJSONOnes(t *testing.T) {
	seen := map[string]bool{}
	var walk func(typ reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ.String()] {
			return
		}
		seen[typ.String()] = true
		for i := range typ.NumField() {
			f := typ.Field(i)
			js, opt, _ := strings.Cut(f.Tag.Get("json"), ",")
			pl, popt, _ := strings.Cut(f.Tag.Get("pulumi"), ",")
			assert.Equal(t, js, pl, "%s.%s", typ, f.Name)
			assert.Equal(t, opt == "omitempty", popt == "optional", "%s.%s: optional iff omitempty", typ, f.Name)
			walk(f.Type)
		}
	}
	args := reflect.TypeOf(ClusterArgs{})
	for i := range args.NumField() {
		walk(args.Field(i).Type)
	}
	assert.Len(t, seen, 11, "Pool, Requirements, Requirement, Disruption, Budget, Taint, NodeClass, Kubelet, AccessEntry, ControllerResources, AddonVersions: %v", seen)
}

// inputsOf is a stack file's configuration as the Cluster's inputs: each
// project key's raw value read by its Pulumi.yaml type. The other
// namespaces' keys (aws:region) are the consumer's stack config.
func inputsOf(t *testing.T, cfg map[string]string) (resource.PropertyMap, map[pconfig.Key]string) {
	t.Helper()
	proj, err := workspace.LoadProject(projectFile)
	require.NoError(t, err)
	inputs := map[string]any{}
	stackCfg := map[pconfig.Key]string{}
	for k, raw := range cfg {
		key, err := pconfig.ParseKey(k)
		require.NoError(t, err)
		if key.Namespace() != testProject {
			stackCfg[key] = raw
			continue
		}
		switch typeOf(proj.Config[key.Name()]) {
		case "string":
			inputs[key.Name()] = raw
		case "boolean":
			b, err := strconv.ParseBool(raw)
			require.NoError(t, err, k)
			inputs[key.Name()] = b
		case "integer":
			n, err := strconv.Atoi(raw)
			require.NoError(t, err, k)
			inputs[key.Name()] = float64(n)
		default:
			var v any
			require.NoError(t, json.Unmarshal([]byte(raw), &v), k)
			inputs[key.Name()] = v
		}
	}
	return resource.NewPropertyMapFromMap(inputs), stackCfg
}

// construct runs the Cluster named name with inputs against a fresh fake
// account (the root tests' dev account).
func construct(t *testing.T, cfg map[string]string, inputs resource.PropertyMap, stackCfg map[pconfig.Key]string) (*mock.Recorder, p.ConstructResponse, error) {
	t.Helper()
	rec := (&fakeaws.Account{Vpc: fakeaws.DevVpc(), ClusterName: cfg[testProject+":clusterName"]}).Recorder(monitorProject, monitorStack)
	resp, err := server(t, rec).Construct(p.ConstructRequest{
		Urn:    resource.NewURN(testStack, testProject, "", Name+":index:Cluster", "cluster"),
		Config: stackCfg,
		Inputs: resource.FromResourcePropertyMap(inputs),
	})
	return rec, resp, err
}

// program is main.go's program (config.Load, nodeless.Deploy, every
// output exported), with a watch that has no cluster under mocks.
func program(ctx *pulumi.Context) error {
	cfg, err := config.Load(ctx, testToday)
	if err != nil {
		return err
	}
	out, err := nodeless.Deploy(ctx, cfg, nodeless.Options{FargateSettle: fargateSettle, Watch: nodeless.Watch{
		API: func(string) (bootwatch.API, error) { return nil, fmt.Errorf("no cluster under mocks") },
	}})
	if err != nil {
		return err
	}
	for name, v := range out.Map() {
		ctx.Export(name, v)
	}
	return nil
}

// TestConstructRegistersWhatTheProgramRegisters: for the dev stack and a
// production one, the Cluster registers the Go program's resources, one
// for one and input for input, under the component; the one intended
// difference is the destroy cleanup's resource (DestroyCleanup for
// pulumi-command's Command, the same settings, dependencies, timeout and
// protection). The dev run is also held to the root's registration golden.
func TestConstructRegistersWhatTheProgramRegisters(t *testing.T) {
	for _, stack := range []struct {
		name, file string
		set        map[string]string
	}{
		{"dev", "../Pulumi.dev.yaml", nil},
		{"production with two pools", "../testdata/stack-multipool.yaml", nil},
		// Empty lists mean "none", not "the default", both ways.
		{"empty lists", "../Pulumi.dev.yaml", map[string]string{
			"clusterLogTypes": "[]", "nodePools": `{"general":{"requirements":{"categories":[]}}}`,
		}},
	} {
		t.Run(stack.name, func(t *testing.T) {
			cfg := stackfile.With(t, projectFile, stack.file, stack.set)
			inputs, stackCfg := inputsOf(t, cfg)

			progRec := (&fakeaws.Account{Vpc: fakeaws.DevVpc(), ClusterName: cfg[testProject+":clusterName"]}).Recorder(testProject, testStack)
			res := progRec.Run(t, cfg, false, pulumieks.WithStandIn(program))
			require.NoError(t, res.Err)
			want := map[string]any{}
			for _, reg := range fakeaws.Registrations(progRec) {
				key, v := normalized(t, reg, "")
				want[key] = v
			}

			rec, resp, err := construct(t, cfg, inputs, stackCfg)
			require.NoError(t, err)
			componentURN := string(resp.Urn)
			require.Contains(t, componentURN, Name+":index:Cluster::cluster")
			got := map[string]any{}
			for _, reg := range fakeaws.Registrations(rec) {
				if reg.URN == componentURN || reg.Type == Name+":index:Cluster" {
					continue
				}
				if reg.Type == destroyCleanupToken {
					// No version and no URL: the engine gives it the
					// Cluster's default provider (registerCleanup).
					assert.Empty(t, reg.Version)
					assert.Empty(t, reg.RPC.GetPluginDownloadURL())
				}
				key, v := normalized(t, reg, componentURN)
				if reg.Type == destroyCleanupToken {
					delete(v, "version")
					delete(v, "pluginDownloadURL")
				}
				got[key] = v
			}
			require.Len(t, got, len(want))
			for key, w := range want {
				require.Contains(t, got, key)
				assert.Equal(t, w, got[key], key)
			}

			if stack.set != nil {
				eks := got["eks:index:Cluster::eks-demo"].(map[string]any)["object"].(map[string]any)
				assert.Equal(t, []any{}, eks["enabledClusterLogTypes"], "no log types, as the stack file says")
			}
			if stack.name == "dev" {
				raw, err := os.ReadFile("../testdata/registrations-dev.golden.json")
				require.NoError(t, err)
				var golden struct {
					Registrations map[string]json.RawMessage `json:"registrations"`
				}
				require.NoError(t, json.Unmarshal(raw, &golden))
				require.Len(t, got, len(golden.Registrations))
				for key, g := range golden.Registrations {
					var v map[string]any
					require.NoError(t, json.Unmarshal(g, &v))
					key, v = normalize(key, v, "")
					require.Contains(t, got, key)
					assert.Equal(t, v, got[key], "%s: the root's golden", key)
				}
			}

			// The outputs are the program's stack outputs.
			props := resource.ToResourcePropertyMap(resp.State)
			state := map[string]any{}
			for k, v := range props {
				assert.Equal(t, res.SecretExports[string(k)], v.IsSecret(), "output %s: secret as the program's", k)
				if v.IsSecret() {
					v = v.SecretValue().Element
				}
				state[string(k)] = v.Mappable()
			}
			for name := range res.Exports {
				assert.Contains(t, state, name)
			}
			assert.Len(t, state, len(res.Exports))
			for name, want := range res.Exports {
				assert.JSONEq(t, jsonOf(t, want), jsonOf(t, state[name]), "output %s", name)
			}
		})
	}
}

// normalized is reg's canonical registration as the program's would read
// (normalize); componentURN is the Cluster's, "" for the program's run.
func normalized(t *testing.T, reg *mock.Registration, componentURN string) (string, map[string]any) {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(reg.Canonical(), &v))
	return normalize(reg.Type+"::"+reg.Name, v, componentURN)
}

// outputValueSig marks a serialized output value (pulumi sdk/go/common/
// resource/sig: OutputValueSig).
const outputValueSig = "d0e6a833031e9bbcd3f4e8bde6ca49a4"

// normalize maps what differs by construction alone between the program's
// run and the Cluster's: the test monitor's project and stack become the
// program's; the component leaves the URNs' type chains, and the
// resources it parents are the stack's; the program's cleanup Command
// reads as the component's DestroyCleanup (asComponentsCleanup); an input
// sent as an output value (the test monitor says it supports them, the
// SDK's mocks do not) is its value, its dependencies being the
// registration's propertyDependencies either way.
func normalize(key string, v map[string]any, componentURN string) (string, map[string]any) {
	if componentURN != "" && v["parent"] == componentURN {
		v["parent"] = string(resource.NewURN(testStack, testProject, "", resource.RootStackType, testProject+"-"+testStack))
	}
	v = rewrite(v).(map[string]any)
	return asComponentsCleanup(key, v)
}

func rewrite(v any) any {
	switch x := v.(type) {
	case string:
		x = strings.ReplaceAll(x, "urn:pulumi:"+monitorStack+"::"+monitorProject+"::", "urn:pulumi:"+testStack+"::"+testProject+"::")
		x = strings.ReplaceAll(x, Name+":index:Cluster$", "")
		x = strings.ReplaceAll(x, "$command:local:Command::", "$"+destroyCleanupToken+"::")
		// The leftover audit is the program's, at its root.
		return strings.ReplaceAll(x, "::command:local:Command::", "::"+destroyCleanupToken+"::")
	case map[string]any:
		if x["4dabf18193072939515e22adb298388d"] == outputValueSig {
			return rewrite(x["value"])
		}
		for k, e := range x {
			x[k] = rewrite(e)
		}
	case []any:
		urns := true
		for i, e := range x {
			x[i] = rewrite(e)
			s, ok := x[i].(string)
			urns = urns && ok && strings.HasPrefix(s, "urn:")
		}
		if urns { // dependency lists, sorted as Canonical sorts them
			sort.Slice(x, func(i, j int) bool { return x[i].(string) < x[j].(string) })
		}
	}
	return v
}

// TestConstructRefusesBadInput: the Cluster refuses what the stack config
// refuses, with config's own message naming the input, before anything
// is registered.
func TestConstructRefusesBadInput(t *testing.T) {
	cfg, err := stackfile.Load(projectFile, "../Pulumi.dev.yaml")
	require.NoError(t, err)
	for _, tt := range []struct {
		name, input string
		value       any
		want        string
	}{
		{"a pool on a class that does not exist", "nodePools", map[string]any{"general": map[string]any{"nodeClass": "missing"}}, "nodePools"},
		{"a requirement of an unknown field", "nodePools", map[string]any{"general": map[string]any{"requirements": map[string]any{"archs": []any{"arm64"}}}}, "nodePools"},
		{"no CoreDNS replicas", "corednsReplicas", float64(0), "corednsReplicas"},
		{"a cluster name AWS refuses", "clusterName", "-starts-with-a-dash", "clusterName"},
		{"a Kubernetes minor Karpenter does not support", "kubernetesVersion", "1.20", "kubernetesVersion"},
		{"a fraction of a replica", "corednsReplicas", 2.5, "corednsReplicas: 2.5: want a whole number"},
		{"a secret", "vpcName", resource.MakeSecret(resource.NewProperty("eks-demo-vpc")), "vpcName: an output of another resource or a secret"},
		{"a value unknown in preview", "tags", resource.MakeComputed(resource.NewProperty("")), "tags: an output of another resource or a secret"},
		{"a nested unknown field", "accessEntries", map[string]any{"ops": map[string]any{"principalArn": "arn:aws:iam::123456789012:role/ops", "policy": "view", "namespace": "x"}}, `accessEntries.ops: unknown field "namespace"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			inputs, stackCfg := inputsOf(t, cfg)
			v, ok := tt.value.(resource.PropertyValue)
			if !ok {
				v = resource.NewPropertyValue(tt.value)
			}
			inputs[resource.PropertyKey(tt.input)] = v
			rec, _, err := construct(t, cfg, inputs, stackCfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), `invalid inputs of `+Name+`:index:Cluster "cluster"`)
			assert.Contains(t, err.Error(), tt.want)
			for _, reg := range fakeaws.Registrations(rec) {
				t.Errorf("registered %s before refusing", reg.URN)
			}
		})
	}
}

// TestEmptyListsStayEmpty: an empty list is "no requirement", not "the
// default", on its way to the config value.
func TestEmptyListsStayEmpty(t *testing.T) {
	values, err := ClusterArgs{
		ClusterLogTypes: []string{},
		Production:      new(bool),
		NodePools:       map[string]spec.Pool{"general": {Requirements: &spec.Requirements{Categories: []string{}}}},
	}.configValues()
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"clusterLogTypes": "[]",
		"production":      "false",
		"nodePools":       `{"general":{"requirements":{"categories":[]}}}`,
	}, values)
}

// fixtureRepository is the release these tests build the package as, as
// the release workflow stamps a build (-X main.repository=): schema.json,
// the example and README's names are this release's.
const fixtureRepository = "my-org/nodeless-eks"

func TestMain(m *testing.M) {
	flag.Parse()
	repository = fixtureRepository
	// A new cluster's Karpenter waits on its profile; the mock engine's need not.
	fargateSettle = time.Nanosecond
	os.Exit(m.Run())
}

// typeOf is a Pulumi.yaml key's type, "" where it declares none.
func typeOf(k workspace.ProjectConfigType) string {
	if k.Type == nil {
		return ""
	}
	return *k.Type
}

// asComponentsCleanup maps the program's destroy cleanup, a pulumi-command
// Command with its script and settings as environment, to the component's
// DestroyCleanup with the settings as its input; the rest (dependencies,
// delete timeout, protect, parent) stays as it is. The Command's alias
// (its URN of earlier program versions), pulumi-command's own defaults and
// its plugin version are the program's only.
func asComponentsCleanup(key string, v map[string]any) (string, map[string]any) {
	if v["type"] != "command:local:Command" {
		return key, v
	}
	obj := v["object"].(map[string]any)
	v["object"] = map[string]any{"settings": obj["environment"]}
	deps := v["propertyDependencies"].(map[string]any)
	v["propertyDependencies"] = map[string]any{"settings": deps["environment"]}
	v["type"] = destroyCleanupToken
	for _, k := range []string{"aliases", "replaceOnChanges", "version"} {
		delete(v, k)
	}
	return destroyCleanupToken + "::" + v["name"].(string), v
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return string(raw)
}

// TestPluginFile: PulumiPlugin.yaml passes the CLI's own loader, names the
// Go runtime, and requires a CLI no older than the SDK the provider is
// built with (go.mod).
func TestPluginFile(t *testing.T) {
	plugin, err := workspace.LoadPluginProject("PulumiPlugin.yaml")
	require.NoError(t, err)
	assert.Equal(t, "go", plugin.Runtime.Name())
	admits, err := semver.ParseRange(plugin.RequiredPulumiVersion)
	require.NoError(t, err, "requiredPulumiVersion is a semver range")
	gomod, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	m := regexp.MustCompile(`github.com/pulumi/pulumi/sdk/v3 v(\S+)`).FindSubmatch(gomod)
	require.NotNil(t, m)
	sdk := semver.MustParse(string(m[1]))
	assert.True(t, admits(sdk), "the CLI of the provider's SDK, %s, is admitted", sdk)
	older := semver.Version{Major: sdk.Major, Minor: sdk.Minor - 1}
	assert.False(t, admits(older), "an older CLI, %s, is refused", older)
	example, err := workspace.LoadProject(filepath.Join("example", "Pulumi.yaml"))
	require.NoError(t, err)
	assert.Equal(t, plugin.RequiredPulumiVersion, example.RequiredPulumiVersion, "the example declares the range a release binary is held to")
}

// TestDestroyCleanupChangesInPlace: new settings (a longer node timeout, a
// new kubeconfig) update the DestroyCleanup; a replacement would delete the
// old one, and so run the cleanup against the live cluster.
func TestDestroyCleanupChangesInPlace(t *testing.T) {
	s := server(t, mock.New(monitorProject, monitorStack))
	settings := func(timeout string) property.Map {
		return property.NewMap(map[string]property.Value{"settings": property.New(map[string]property.Value{
			cleanup.EnvNodeTimeout: property.New(timeout), cleanup.EnvOwnLabel: property.New("nodeless-eks/stack=consumer.dev"),
		})})
	}
	urn := resource.NewURN(testStack, testProject, "", destroyCleanupToken, "cleanup")
	resp, err := s.Diff(p.DiffRequest{ID: "cleanup", Urn: urn, State: settings("1h15m0s"), OldInputs: settings("1h15m0s"), Inputs: settings("2h15m0s")})
	require.NoError(t, err)
	assert.True(t, resp.HasChanges)
	require.NotEmpty(t, resp.DetailedDiff)
	for path, d := range resp.DetailedDiff {
		assert.Equal(t, p.Update, d.Kind, "%s changes in place", path)
	}
	up, err := s.Update(p.UpdateRequest{ID: "cleanup", Urn: urn, State: settings("1h15m0s"), Inputs: settings("2h15m0s")})
	require.NoError(t, err)
	assert.Equal(t, settings("2h15m0s"), up.Properties)
}

// TestClusterOptionsReachTheCleanup: the DestroyCleanup names no version
// and no download URL, whatever version the engine configured this
// provider with (the engine fills both from the program's required
// plugins: registerCleanup), and a Cluster protected by its consumer
// protects its cleanup, ArgoCD and the LB controller's CRDs, which
// inherit it. Explicit providers are refused, naming them.
func TestClusterOptionsReachTheCleanup(t *testing.T) {
	cfg, err := stackfile.Load(projectFile, "../Pulumi.dev.yaml")
	require.NoError(t, err)
	inputs, stackCfg := inputsOf(t, cfg)
	inputs["argocd"] = resource.NewProperty(true)
	rec := (&fakeaws.Account{Vpc: fakeaws.DevVpc(), ClusterName: cfg[testProject+":clusterName"]}).Recorder(monitorProject, monitorStack)
	s := server(t, rec)
	require.NoError(t, s.Configure(p.ConfigureRequest{Args: property.NewMap(map[string]property.Value{
		"version": property.New("0.0.0-x0123456789abcdef"),
	})}))
	protect := true
	urn := resource.NewURN(testStack, testProject, "", Name+":index:Cluster", "cluster")
	_, err = s.Construct(p.ConstructRequest{Urn: urn, Config: stackCfg, Inputs: resource.FromResourcePropertyMap(inputs), Protect: &protect})
	require.NoError(t, err)
	var cleanups int
	for _, reg := range rec.All() {
		switch {
		case reg.Type == destroyCleanupToken:
			cleanups++
			assert.Empty(t, reg.Version, "the engine fills it from the consumer's SDK")
			assert.Empty(t, reg.RPC.GetPluginDownloadURL())
			assert.True(t, reg.Protect, "the cleanup is protected with the Cluster")
		case strings.HasSuffix(reg.Name, "-argocd"), strings.HasSuffix(reg.Name, "-lb-controller-crds"):
			assert.True(t, reg.Protect, "%s is protected with the Cluster", reg.Name)
		}
	}
	assert.Equal(t, 2, cleanups, "the workloads' cleanup and the leftover audit")

	rec = (&fakeaws.Account{Vpc: fakeaws.DevVpc(), ClusterName: cfg[testProject+":clusterName"]}).Recorder(monitorProject, monitorStack)
	_, err = server(t, rec).Construct(p.ConstructRequest{Urn: urn, Config: stackCfg, Inputs: resource.FromResourcePropertyMap(inputs),
		Providers: map[tokens.Package]p.ProviderReference{"aws": {Urn: "urn:pulumi:dev::nodeless-eks::pulumi:providers:aws::other", ID: "id"}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cluster cluster: explicit providers (aws) are not supported")
	assert.Empty(t, rec.All(), "nothing registered")
}

// TestSourceBuildNamesNoDownloadURL: a build the release did not stamp
// names no download URL and no namespace, which `pulumi package add` fills
// from the source it was given.
func TestSourceBuildNamesNoDownloadURL(t *testing.T) {
	repository = ""
	t.Cleanup(func() { repository = fixtureRepository })
	var spec map[string]any
	require.NoError(t, json.Unmarshal(schemaJSON(t), &spec))
	for _, k := range []string{"pluginDownloadURL", "namespace", "repository"} {
		assert.NotContains(t, spec, k)
	}
}

// consumerDoc is a Pulumi.yaml description as a package consumer reads it:
// what the Go program does, the Cluster does, and the sentences about
// deploy/, this repository's own fleet tooling, go.
func consumerDoc(desc string) string {
	var kept []string
	for _, sentence := range strings.SplitAfter(desc, ". ") {
		if !strings.Contains(sentence, "deploy/") {
			kept = append(kept, sentence)
		}
	}
	return strings.TrimSpace(strings.ReplaceAll(strings.Join(kept, ""), "the program", "the Cluster"))
}
