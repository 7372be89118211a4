// Package mock is the mock engine every module's tests run their Pulumi
// programs against: it records each RegisterResource call with the options
// the engine would act on (parent, dependencies, provider, protect, custom
// timeouts, transforms), answers lookups by type and name, and walks the
// dependency graph transitively. What a resource's state and an invoke
// return is the test's: a Recorder takes them as functions.
package mock

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Registration is one RegisterResource call as the engine would see it.
type Registration struct {
	Type, Name, URN string
	Custom, Remote  bool
	Inputs          resource.PropertyMap
	Parent          string
	Dependencies    []string
	// Provider is the provider reference, "<urn>::<id>", "" for the default.
	Provider string
	// Version is the provider plugin version the SDK asked for.
	Version string
	// CreateTimeout, UpdateTimeout and DeleteTimeout are the custom
	// timeouts, "" where none is set.
	CreateTimeout, UpdateTimeout, DeleteTimeout string
	Protect, RetainOnDelete                     bool
	ImportID                                    string
	// Transforms counts transform callbacks; Aliases are the names of the
	// alias specs the resource carries.
	Transforms int
	Aliases    []string
	// Transformed is what the registration's transforms make of the
	// children a remote component creates (Recorder.Children), by type.
	Transformed map[string]Transformed
	// RPC is the whole request, for what the fields above leave out.
	RPC *pulumirpc.RegisterResourceRequest
}

// Transformed is a child's inputs and protect option after a
// registration's transforms ran on them, as the engine runs them.
type Transformed struct {
	Props   resource.PropertyMap
	Protect bool
	// CreateTimeout and UpdateTimeout are the custom timeouts a transform
	// gave the child, "" where none.
	CreateTimeout, UpdateTimeout string
	// Unchanged is true when no transform returned a result.
	Unchanged bool
}

// Invocation is one invoke as the engine would see it.
type Invocation struct {
	Token string
	Args  resource.PropertyMap
	// Provider is the provider reference, "<urn>::<id>", "" for the default.
	Provider string
}

// Recorder is a pulumi.MockResourceMonitor that keeps every registration.
type Recorder struct {
	// State gives a registered resource its ID and state; nil gives a
	// custom resource "<name>-id" and its inputs as its state.
	State func(reg *Registration) (id string, state resource.PropertyMap, err error)
	// Invoke answers invokes; nil refuses every invoke.
	Invoke func(args pulumi.MockCallArgs) (resource.PropertyMap, error)
	// Children are representative children of a remote component, by the
	// component's type and then the child's, that the component's
	// transforms are run on as the engine would run them.
	Children map[string]map[string]resource.PropertyMap
	// ChildNames name those children, by the child's type: a format with
	// one %s for the component's name; "child" where none is given.
	ChildNames map[string]string
	// Hold delays the creation of the named resources until their channel
	// closes (or HoldLimit passes), as a slow step of `pulumi up` does.
	Hold      map[string]chan struct{}
	HoldLimit time.Duration

	project, stack string
	mu             sync.Mutex
	byKey          map[string]*Registration // "type::name"
	byURN          map[string]*Registration
	states         map[string]resource.PropertyMap // by URN: {urn, id, state}
	order          []*Registration
	invocations    []Invocation
}

// New returns a recorder for stack of project, the names its URNs carry.
func New(project, stack string) *Recorder {
	return &Recorder{project: project, stack: stack, HoldLimit: 20 * time.Second,
		byKey: map[string]*Registration{}, byURN: map[string]*Registration{}, states: map[string]resource.PropertyMap{}}
}

// NewResource records the registration and answers with State.
func (r *Recorder) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	if ch, ok := r.Hold[args.Name]; ok {
		select {
		case <-ch:
		case <-time.After(r.HoldLimit):
		}
	}
	reg := &Registration{Type: args.TypeToken, Name: args.Name, Custom: args.Custom, Inputs: args.Inputs,
		Provider: args.Provider, RPC: args.RegisterRPC}
	if rpc := args.RegisterRPC; rpc != nil {
		reg.Parent = rpc.GetParent()
		reg.Dependencies = rpc.GetDependencies()
		reg.Remote = rpc.GetRemote()
		reg.Version = rpc.GetVersion()
		reg.CreateTimeout = rpc.GetCustomTimeouts().GetCreate()
		reg.UpdateTimeout = rpc.GetCustomTimeouts().GetUpdate()
		reg.DeleteTimeout = rpc.GetCustomTimeouts().GetDelete()
		reg.Protect = rpc.GetProtect()
		reg.RetainOnDelete = rpc.GetRetainOnDelete()
		reg.ImportID = rpc.GetImportId()
		reg.Transforms = len(rpc.GetTransforms())
		for _, a := range rpc.GetAliases() {
			if spec := a.GetSpec(); spec != nil {
				reg.Aliases = append(reg.Aliases, spec.GetName())
			}
		}
	}
	reg.URN = r.urn(reg.Parent, reg.Type, reg.Name)
	if children, ok := r.Children[reg.Type]; ok && reg.Transforms > 0 {
		reg.Transformed = map[string]Transformed{}
		for typ, props := range children {
			name := "child"
			if format, ok := r.ChildNames[typ]; ok {
				name = fmt.Sprintf(format, reg.Name)
			}
			got, err := runTransforms(args.RegisterRPC.GetTransforms(), reg.URN, typ, name, props.Copy())
			if err != nil {
				return "", nil, fmt.Errorf("running the transforms of %s on a %s: %w", reg.Name, typ, err)
			}
			reg.Transformed[typ] = got
		}
	}

	r.mu.Lock()
	r.byKey[reg.Type+"::"+reg.Name] = reg
	r.byURN[reg.URN] = reg
	r.order = append(r.order, reg)
	r.mu.Unlock()

	id, state := "", args.Inputs.Copy()
	if args.Custom {
		id = args.Name + "-id"
	}
	if r.State != nil {
		var err error
		if id, state, err = r.State(reg); err != nil {
			return "", nil, err
		}
	}
	r.mu.Lock()
	r.states[reg.URN] = resource.PropertyMap{"urn": resource.NewProperty(reg.URN), "id": resource.NewProperty(id),
		"state": resource.NewProperty(state)}
	r.mu.Unlock()
	return id, state, nil
}

// Call records the invoke and answers with Invoke.
func (r *Recorder) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	r.mu.Lock()
	r.invocations = append(r.invocations, Invocation{Token: args.Token, Args: args.Args, Provider: args.Provider})
	r.mu.Unlock()
	if args.Token == getResource {
		return r.resourceState(args.Args["urn"].StringValue())
	}
	if r.Invoke == nil {
		return nil, fmt.Errorf("unexpected invoke %s", args.Token)
	}
	return r.Invoke(args)
}

// getResource is the invoke the SDK reads a resource reference's state
// with. The SDK's own mocks answer it before the Recorder is asked
// (sdk/go/pulumi/mocks.go); pulumi-go-provider's test server, whose
// monitor hands every invoke on (integration/fake/monitor.go at v1.5.0),
// does not, so the Recorder answers it from what it registered.
const getResource = "pulumi:pulumi:getResource"

func (r *Recorder) resourceState(urn string) (resource.PropertyMap, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st, ok := r.states[urn]; ok {
		return st, nil
	}
	return nil, fmt.Errorf("unknown resource %s", urn)
}

// urn is the URN the SDK's mock monitor gives a resource (mocks.go newURN):
// the parent's type, not its whole chain, goes before the resource's.
func (r *Recorder) urn(parent, typ, name string) string {
	parentType := tokens.Type("")
	if p := resource.URN(parent); p != "" && p.QualifiedType() != resource.RootStackType {
		parentType = p.QualifiedType()
	}
	return string(resource.NewURN(tokens.QName(r.stack), tokens.PackageName(r.project), parentType, tokens.Type(typ), name))
}

// Find returns the registration of type typ called name.
func (r *Recorder) Find(typ, name string) (*Registration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reg, ok := r.byKey[typ+"::"+name]
	return reg, ok
}

// Get returns the registration of type typ called name, failing the test
// and listing what was registered if there is none.
func (r *Recorder) Get(t testing.TB, typ, name string) *Registration {
	t.Helper()
	reg, ok := r.Find(typ, name)
	require.Truef(t, ok, "no %s named %q was registered; registered: %s", typ, name, r.keys())
	return reg
}

// ByURN returns the registration with that URN.
func (r *Recorder) ByURN(urn string) (*Registration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reg, ok := r.byURN[urn]
	return reg, ok
}

// OfType returns the registrations of a type in registration order.
func (r *Recorder) OfType(typ string) []*Registration {
	var out []*Registration
	for _, reg := range r.All() {
		if reg.Type == typ {
			out = append(out, reg)
		}
	}
	return out
}

// All returns every registration in registration order.
func (r *Recorder) All() []*Registration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Registration(nil), r.order...)
}

// Invocations returns every invoke in the order the program made them.
func (r *Recorder) Invocations() []Invocation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Invocation(nil), r.invocations...)
}

func (r *Recorder) keys() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, 0, len(r.byKey))
	for k := range r.byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

// ProviderURN is the URN of the registration's explicit provider, "" for
// the default provider. A provider reference is "<urn>::<id>".
func (reg *Registration) ProviderURN() string {
	if i := strings.LastIndex(reg.Provider, "::"); i > 0 {
		return reg.Provider[:i]
	}
	return ""
}

// Edges are the URNs a registration waits for: its dependencies and its
// provider (the engine creates a resource only after its provider).
func (reg *Registration) Edges() []string {
	out := append([]string(nil), reg.Dependencies...)
	if p := reg.ProviderURN(); p != "" {
		out = append(out, p)
	}
	return out
}

// DependsOn reports whether from reaches to through registered
// dependencies and providers, transitively.
func (r *Recorder) DependsOn(from, to *Registration) bool {
	seen := map[string]bool{}
	stack := from.Edges()
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
		if reg, ok := r.ByURN(urn); ok {
			stack = append(stack, reg.Edges()...)
		}
	}
	return false
}

// RequireDependsOn fails unless from depends on to, directly or not.
func (r *Recorder) RequireDependsOn(t testing.TB, from, to *Registration) {
	t.Helper()
	require.Truef(t, r.DependsOn(from, to), "%s::%s must depend on %s::%s; its direct dependencies: %v",
		from.Type, from.Name, to.Type, to.Name, from.Dependencies)
}

// RequireNotDependsOn fails if from depends on to, directly or not.
func (r *Recorder) RequireNotDependsOn(t testing.TB, from, to *Registration) {
	t.Helper()
	require.Falsef(t, r.DependsOn(from, to), "%s::%s must not depend on %s::%s", from.Type, from.Name, to.Type, to.Name)
}

// StandInType is the type of StandIn resources.
const StandInType = "test:index:StandIn"

// StandIn is a custom resource with no inputs that a layer's test hands
// the layer where the program would hand it a resource of another layer,
// so that the test can check what waits for it.
type StandIn struct {
	pulumi.CustomResourceState
}

// NewStandIn registers a StandIn called name.
func NewStandIn(ctx *pulumi.Context, name string) (*StandIn, error) {
	var r StandIn
	if err := ctx.RegisterResource(StandInType, name, nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// NewStandIns registers a StandIn for each name, by name.
func NewStandIns(ctx *pulumi.Context, names ...string) (map[string]pulumi.Resource, error) {
	out := map[string]pulumi.Resource{}
	for _, name := range names {
		r, err := NewStandIn(ctx, name)
		if err != nil {
			return nil, err
		}
		out[name] = r
	}
	return out, nil
}

// RequireRefused fails unless a run failed with an error that contains
// want and registered nothing: bad input is refused before anything exists.
func (r *Recorder) RequireRefused(t testing.TB, err error, want string) {
	t.Helper()
	require.Error(t, err)
	assert.Contains(t, err.Error(), want)
	var registered []string
	for _, reg := range r.All() {
		// A provider is configuration: registering one creates nothing in
		// any account, and the checks that refuse read through it.
		if !strings.HasPrefix(reg.Type, "pulumi:providers:") {
			registered = append(registered, reg.Type+"::"+reg.Name)
		}
	}
	assert.Empty(t, registered, "nothing may be registered for refused input")
}
