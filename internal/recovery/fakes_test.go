package recovery

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	testAccount = "123456789012"
	testRegion  = "eu-west-1"
	testStack   = "urn:pulumi:dev::nodeless-eks::"
)

// exitStatus is what exec returns for a command that exited non-zero.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// awsAnswer is what the fake AWS CLI prints for one call: its output, or
// the error code AWS answered with.
type awsAnswer struct {
	out  any
	code string
}

// fakeAWS stands in for the AWS CLI: it answers each "service operation"
// from a handler, prints JSON as the CLI does with --output json, and
// prints AWS errors on stderr as the CLI does, with exit status 254.
type fakeAWS struct {
	mu       sync.Mutex
	handlers map[string]func(args []string) awsAnswer
	// failAll answers every call but STS with this code.
	failAll string
	calls   []string
	// envs are the environments of the calls, in order.
	envs    [][]string
	account string
}

func newFakeAWS() *fakeAWS {
	return &fakeAWS{handlers: map[string]func([]string) awsAnswer{}, account: testAccount}
}

// on answers calls of "service operation".
func (f *fakeAWS) on(op string, h func(args []string) awsAnswer) { f.handlers[op] = h }

// answer answers every call of op with out.
func (f *fakeAWS) answer(op string, out any) {
	f.on(op, func([]string) awsAnswer { return awsAnswer{out: out} })
}

// refuse answers every call of op with an AWS error code.
func (f *fakeAWS) refuse(op, code string) {
	f.on(op, func([]string) awsAnswer { return awsAnswer{code: code} })
}

func (f *fakeAWS) run(_ context.Context, env []string, name string, args ...string) ([]byte, string, error) {
	if name != "aws" {
		return nil, "", fmt.Errorf("the fake runs only aws, not %s", name)
	}
	// The recovery always asks for JSON, in the provider's region.
	var rest []string
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--output":
			if args[i+1] != "json" {
				return nil, "", fmt.Errorf("--output %s", args[i+1])
			}
			i++
		case "--region":
			if args[i+1] != testRegion {
				return nil, "", fmt.Errorf("--region %s, not the provider's", args[i+1])
			}
			i++
		default:
			rest = append(rest, args[i])
		}
	}
	op := rest[0] + " " + rest[1]
	f.mu.Lock()
	f.calls = append(f.calls, strings.Join(rest, " "))
	f.envs = append(f.envs, env)
	h, ok := f.handlers[op]
	fail := f.failAll
	f.mu.Unlock()
	var a awsAnswer
	switch {
	case op == "sts get-caller-identity":
		a.out = map[string]string{"Account": f.account, "Arn": "arn:aws:sts::" + f.account + ":assumed-role/deploy/x"}
		if slices.Contains(env, "AWS_ACCESS_KEY_ID=ASIA-ASSUMED") {
			a.out = map[string]string{"Account": "444455556666"}
		}
	case op == "sts assume-role":
		a.out = map[string]any{"Credentials": map[string]string{"AccessKeyId": "ASIA-ASSUMED", "SecretAccessKey": "s", "SessionToken": "t"}}
	case fail != "":
		a.code = fail
	case ok:
		a = h(rest[2:])
	default:
		return nil, "", fmt.Errorf("the fake AWS has no answer for aws %s", strings.Join(rest, " "))
	}
	if a.code != "" {
		return nil, fmt.Sprintf("\nAn error occurred (%s) when calling the %s operation: what AWS says\n", a.code, rest[1]), exitStatus(254)
	}
	out, err := json.Marshal(a.out)
	return out, "", err
}

// arg is the value after flag in args.
func arg(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// fixture is what a finder may ask.
type fixture struct {
	aws *fakeAWS
}

// testSince is when the interrupted update began at the earliest in the
// tests (what `pulumi stack history` says): the fakes' objects were made
// after it, at testCreated.
var testSince = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

const testCreated = "2026-12-01T09:00:00Z"

func newFixture(t *testing.T) *fixture {
	return &fixture{aws: newFakeAWS()}
}

func (f *fixture) lookups() *CLILookups {
	return &CLILookups{Run: f.aws.run, Poll: time.Millisecond}
}

// registered are the dev stack's registrations, by "<type>::<name>": the
// inputs the program really sends.
func registered(t *testing.T) map[string]map[string]any {
	t.Helper()
	raw, err := os.ReadFile("../../testdata/registrations-dev.golden.json")
	require.NoError(t, err)
	var golden struct {
		Registrations map[string]struct {
			Object map[string]any `json:"object"`
		} `json:"registrations"`
	}
	require.NoError(t, json.Unmarshal(raw, &golden))
	out := map[string]map[string]any{}
	for k, v := range golden.Registrations {
		out[k] = v.Object
	}
	return out
}

// awsProviderURN is the default aws provider of the test states.
const awsProviderURN = testStack + "pulumi:providers:aws::default_6_83_4"

// clusterRoleURN is a role the test states hold: its ARN names the
// stack's account.
const clusterRoleURN = testStack + "aws:iam/role:Role::eks-demo-cluster"

// state is a deployment with the default aws provider, a role of the
// stack's account, and pending operations.
func state(ops ...Operation) *Deployment {
	d := &Deployment{Resources: []Resource{
		{URN: awsProviderURN, Type: "pulumi:providers:aws", Custom: true, ID: "prov-id", Inputs: map[string]any{"region": testRegion}},
		{URN: clusterRoleURN, Type: "aws:iam/role:Role", Custom: true, ID: "eks-demo-cluster", Provider: awsProviderURN + "::prov-id",
			Outputs: map[string]any{"arn": "arn:aws:iam::" + testAccount + ":role/eks-demo-cluster"}},
	}}
	d.PendingOperations = ops
	return d
}

// pendingCreate is a pending create of typ named name, through the
// default aws provider.
func pendingCreate(typ, name string, inputs map[string]any) Operation {
	return Operation{Type: Creating, Resource: Resource{URN: testStack + typ + "::" + name, Type: typ, Custom: true,
		Inputs: inputs, Provider: awsProviderURN + "::prov-id"}}
}

// queueURL is the URL SQS gives a queue of name in the tests' account.
func queueURL(name string) string {
	return "https://sqs." + testRegion + ".amazonaws.com/123456789012/" + name
}

// queueExists makes SQS answer for queues of names, made at testCreated,
// and not found for any other.
func (f *fixture) queueExists(names ...string) {
	f.aws.on("sqs get-queue-url", func(a []string) awsAnswer {
		if !slices.Contains(names, arg(a, "--queue-name")) {
			return awsAnswer{code: "AWS.SimpleQueueService.NonExistentQueue"}
		}
		return awsAnswer{out: map[string]any{"QueueUrl": queueURL(arg(a, "--queue-name"))}}
	})
	f.aws.answer("sqs get-queue-attributes", map[string]any{"Attributes": map[string]any{"CreatedTimestamp": "1796115600"}}) // testCreated
}
