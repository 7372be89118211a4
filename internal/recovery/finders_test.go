package recovery

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAKeyNotEnabledIsNotThisRuns: a destroyed stack of the same cluster
// name leaves its key pending deletion, and a person may have disabled
// one; neither is what a cut-off CreateKey left (an Enabled key).
func TestAKeyNotEnabledIsNotThisRuns(t *testing.T) {
	for _, keyState := range []string{"Disabled", "PendingDeletion", "PendingReplicaDeletion", "Unavailable"} {
		t.Run(keyState, func(t *testing.T) {
			f := newFixture(t)
			kmsAccount(f, keyState)
			d, _ := scenarioOp(t, "aws:kms/key:Key", scenarios["aws:kms/key:Key"])
			v := verdictOf(t, f, d)
			assert.NotEqual(t, Import, v.Outcome, "a %s key is never adopted", keyState)
		})
	}
}

// TestPulumiCloudsOIDCProviderIsAdoptedOnlyWithItsOwnerTag: an account
// has one provider for https://api.pulumi.com/oidc, whoever made it; the
// recovery adopts it only when it carries the tag the cut-off create sent.
func TestPulumiCloudsOIDCProviderIsAdoptedOnlyWithItsOwnerTag(t *testing.T) {
	inputs := map[string]any{"url": "https://api.pulumi.com/oidc", "clientIdLists": []any{"aws:my-org"},
		"tags": map[string]any{ownerTagKey: "my-org/deploy/prod"}}
	arn := "arn:aws:iam::" + testAccount + ":oidc-provider/api.pulumi.com/oidc"
	for name, tc := range map[string]struct {
		tags []any
		want Outcome
	}{
		"this stack's":           {[]any{map[string]any{"Key": ownerTagKey, "Value": "my-org/deploy/prod"}}, Import},
		"another stack's":        {[]any{map[string]any{"Key": ownerTagKey, "Value": "my-org/deploy/staging"}}, Undecided},
		"made by hand, untagged": {nil, Undecided},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.aws.answer("iam get-open-id-connect-provider", map[string]any{"Url": "api.pulumi.com/oidc", "Tags": tc.tags})
			v := verdictOf(t, f, state(pendingCreate("aws:iam/openIdConnectProvider:OpenIdConnectProvider", "pulumi-cloud", inputs)))
			assert.Equal(t, tc.want, v.Outcome, v.Why)
			if tc.want == Import {
				assert.Equal(t, arn, v.ID)
				return
			}
			assert.Contains(t, v.Why, "does not carry the tag "+ownerTagKey+`="my-org/deploy/prod"`)
		})
	}
}

// TestTheCreatorsOwnAccessEntryIsNotAdopted: EKS makes an entry for the
// identity that created the cluster, at the cluster's creation; an entry
// for that principal is not what the program's cut-off create left.
func TestTheCreatorsOwnAccessEntryIsNotAdopted(t *testing.T) {
	sc := scenarios["aws:eks/accessEntry:AccessEntry"]
	for name, tc := range map[string]struct {
		entryMade string
		want      Outcome
	}{
		"made with the cluster":      {"2026-12-01T09:00:41Z", Undecided},
		"made half an hour later":    {"2026-12-01T09:31:00Z", Import},
		"no creation time in answer": {"", Undecided},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.aws.answer("eks describe-access-entry", map[string]any{"accessEntry": map[string]any{"createdAt": tc.entryMade}})
			f.aws.answer("eks describe-cluster", map[string]any{"cluster": map[string]any{"createdAt": "2026-12-01T09:00:00Z"}})
			d, _ := scenarioOp(t, "aws:eks/accessEntry:AccessEntry", sc)
			v := verdictOf(t, f, d)
			assert.Equal(t, tc.want, v.Outcome, v.Why)
		})
	}
}

// TestAQueueWithoutAPolicyPrintsNothing: `aws sqs get-queue-attributes
// --attribute-names Policy` of a queue without one prints nothing at all
// (no JSON): that is a queue without a policy, not a failure.
func TestAQueueWithoutAPolicyPrintsNothing(t *testing.T) {
	f := newFixture(t)
	f.aws.on("sqs get-queue-attributes", func([]string) awsAnswer { return awsAnswer{out: printsNothing{}} })
	d, _ := scenarioOp(t, "aws:sqs/queuePolicy:QueuePolicy", scenarios["aws:sqs/queuePolicy:QueuePolicy"])
	v := verdictOf(t, f, d)
	assert.Equal(t, Clear, v.Outcome, v.Why)
}

// TestACutOffImportIsRecoveredAsACreate: `pulumi import` (and a refresh
// with --import-pending-creates) leaves an operation of type importing;
// nothing in the engine reads it back, so the recovery treats it as the
// create it stands for.
func TestACutOffImportIsRecoveredAsACreate(t *testing.T) {
	f := newFixture(t)
	f.aws.answer("iam get-role", map[string]any{"Role": map[string]any{"RoleName": "r"}})
	op := pendingCreate("aws:iam/role:Role", "r", map[string]any{"name": "r"})
	op.Type = Importing
	verdicts, err := Plan(context.Background(), state(op), f.lookups(), Options{})
	require.NoError(t, err)
	require.Len(t, verdicts, 1)
	assert.Equal(t, Import, verdicts[0].Outcome, verdicts[0].Why)

	raw := exportOf(t, time.Now().Add(-time.Hour), baseResources(), []map[string]any{pending(Importing,
		res(karpRole, "aws:iam/role:Role", true, "", stackURN, awsProviderURN+"::prov-id", map[string]any{"name": "r"}))})
	edited, err := Edit(raw, map[string]Imported{karpRole: {ID: "r"}}, nil)
	require.NoError(t, err)
	d, err := ParseExport(edited)
	require.NoError(t, err)
	assert.Empty(t, d.PendingOperations, "the import's operation is dropped")
	assert.NotNil(t, d.byURN(karpRole), "and its object is in the state")
}

// TestAssumeRoleUsesTheProvidersRegion: an account whose STS global
// endpoint is off (or an opt-in region) answers only regionally.
func TestAssumeRoleUsesTheProvidersRegion(t *testing.T) {
	f := newFixture(t)
	f.aws.answer("iam get-role", map[string]any{"Role": map[string]any{}})
	l := f.lookups()
	var assumes [][]string
	l.Run = func(ctx context.Context, env []string, name string, args ...string) ([]byte, string, error) {
		if len(args) > 1 && args[0] == "sts" && args[1] == "assume-role" {
			assumes = append(assumes, args)
		}
		return f.aws.run(ctx, env, name, args...)
	}
	op := pendingCreate("aws:iam/role:Role", "r", map[string]any{"name": "deploy-prod"})
	provider := testStack + "pulumi:providers:aws::account-prod"
	op.Resource.Provider = provider + "::p2"
	d := state(op)
	d.Resources = append(d.Resources, Resource{URN: provider, Type: "pulumi:providers:aws", Custom: true, ID: "p2", Inputs: map[string]any{
		"region": testRegion, "allowedAccountIds": `["444455556666"]`, "assumeRole": `{"roleArn":"arn:aws:iam::444455556666:role/deploy-admin"}`}})
	verdicts, err := Plan(context.Background(), d, l, Options{})
	require.NoError(t, err)
	require.Len(t, assumes, 1, verdicts[0].Why)
	assert.Equal(t, testRegion, arg(assumes[0], "--region"))
}

// TestALockFromAContainerOfThisName: a hostname is not a machine; a
// process of another container of the same name looks gone from here.
func TestALockFromAContainerOfThisName(t *testing.T) {
	requireProcessChecks(t)
	for name, tc := range map[string]struct {
		link string
		err  error
		want string
	}{
		"a PID namespace of its own": {link: "pid:[4026532198]", want: "runs in a PID namespace of its own (pid:[4026532198], a container)"},
		"no /proc":                   {err: os.ErrPermission, want: "cannot tell whether it sees every process of its host"},
		// This process sees the host, and a container of the same name
		// (host networking) runs beside it.
		"a container beside it": {link: "container", want: "a process of this host runs in a PID namespace of its own"},
		// Not root: another user's process cannot be read, and may be a container's.
		"another user's process": {link: "unreadable", want: "so it cannot tell whether a container runs beside it"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			role := res(karpRole, "aws:iam/role:Role", true, "", stackURN, awsProviderURN+"::prov-id", map[string]any{"name": "r"})
			before := exportOf(t, time.Now().Add(-time.Hour), baseResources(), []map[string]any{pending(Creating, role)})
			p := &fakePulumi{export: before, processes: map[int]string{}}
			var out bytes.Buffer
			s := newSession(t, p, f, &out)
			s.Readlink = func(path string) (string, error) {
				if tc.link == "unreadable" {
					if path == "/proc/self/ns/pid" || path != fmt.Sprintf("/proc/%d/ns/pid", os.Getpid()) {
						return initPIDNamespace, nil
					}
					return "", os.ErrPermission
				}
				if tc.link == "container" {
					if path == "/proc/self/ns/pid" || path != fmt.Sprintf("/proc/%d/ns/pid", os.Getpid()) {
						return initPIDNamespace, nil
					}
					return "pid:[4026532555]", nil
				}
				return tc.link, tc.err
			}
			dir := filepath.Join(strings.TrimPrefix(p.backend, "file://"), ".pulumi", "locks", "dev")
			require.NoError(t, os.MkdirAll(dir, 0o755))
			lock := filepath.Join(dir, "l.json")
			// A PID no process here has: gone, were this the whole host.
			require.NoError(t, os.WriteFile(lock, []byte(fmt.Sprintf(`{"pid":%d,"username":"u","hostname":"runner-1","timestamp":"2026-12-01T10:00:00Z"}`, 1<<22-7)), 0o600))
			_, err := s.Recover(context.Background())
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "`pulumi cancel --stack dev --yes` removes the lock")
			assert.FileExists(t, lock)
			assert.Equal(t, before, p.export)
			assert.False(t, slices.ContainsFunc(p.calls, func(c string) bool { return strings.HasPrefix(c, "stack import") }))
		})
	}
}

// TestAnUnattachedInternetGatewayIsNotAdopted: the create attaches its
// gateway in the same call; one attached to no VPC may be another stack's.
func TestAnUnattachedInternetGatewayIsNotAdopted(t *testing.T) {
	f := newFixture(t)
	f.aws.answer("ec2 describe-internet-gateways", map[string]any{"InternetGateways": []any{
		map[string]any{"InternetGatewayId": "igw-loose", "Attachments": []any{}}}})
	d, _ := scenarioOp(t, "aws:ec2/internetGateway:InternetGateway", scenarios["aws:ec2/internetGateway:InternetGateway"])
	v := verdictOf(t, f, d)
	assert.Equal(t, Undecided, v.Outcome, v.Why)
	assert.Contains(t, v.Why, "igw-loose carry its tags and are attached to no VPC")
}

// TestProcessNamesFromProc: on Linux the lock's process is named from
// /proc, with no ps (debian-slim images have none, BusyBox's has no -p).
func TestProcessNamesFromProc(t *testing.T) {
	if !onLinux() {
		t.Skip("no /proc")
	}
	s := &Session{Run: func(context.Context, []string, string, ...string) ([]byte, string, error) {
		return nil, "", fmt.Errorf("no ps here")
	}}
	name, err := s.commandOf(context.Background(), os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, filepath.Base(os.Args[0])[:min(15, len(filepath.Base(os.Args[0])))], name, "comm, cut at 15 bytes (proc(5))")
}
