package recovery

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestACutOffImportIsRecoveredAsACreate: `pulumi import` (and a refresh
// with --import-pending-creates) leaves an operation of type importing;
// nothing in the engine reads it back, so the recovery treats it as the
// create it stands for.
func TestACutOffImportIsRecoveredAsACreate(t *testing.T) {
	f := newFixture(t)
	f.queueExists("r")
	op := pendingCreate("aws:sqs/queue:Queue", "r", map[string]any{"name": "r"})
	op.Type = Importing
	verdicts, err := Plan(context.Background(), state(op), f.lookups(), Options{Since: testSince})
	require.NoError(t, err)
	require.Len(t, verdicts, 1)
	assert.Equal(t, Import, verdicts[0].Outcome, verdicts[0].Why)

	raw := exportOf(t, time.Now().Add(-time.Hour), baseResources(), []map[string]any{pending(Importing,
		res(karpRole, "aws:sqs/queue:Queue", true, "", stackURN, awsProviderURN+"::prov-id", map[string]any{"name": "r"}))})
	edited, err := Edit(raw, map[string]string{karpRole: queueURL("r")}, nil)
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
	f.queueExists("r", "r-1", "deploy-prod")
	l := f.lookups()
	var assumes [][]string
	l.Run = func(ctx context.Context, env []string, name string, args ...string) ([]byte, string, error) {
		if len(args) > 1 && args[0] == "sts" && args[1] == "assume-role" {
			assumes = append(assumes, args)
		}
		return f.aws.run(ctx, env, name, args...)
	}
	op := pendingCreate("aws:sqs/queue:Queue", "r", map[string]any{"name": "deploy-prod"})
	provider := testStack + "pulumi:providers:aws::account-prod"
	op.Resource.Provider = provider + "::p2"
	d := state(op)
	d.Resources = append(d.Resources, Resource{URN: provider, Type: "pulumi:providers:aws", Custom: true, ID: "p2", Inputs: map[string]any{
		"region": testRegion, "allowedAccountIds": `["444455556666"]`, "assumeRole": `{"roleArn":"arn:aws:iam::444455556666:role/deploy-admin"}`}})
	verdicts, err := Plan(context.Background(), d, l, Options{Since: testSince})
	require.NoError(t, err)
	require.Len(t, assumes, 1, verdicts[0].Why)
	assert.Equal(t, testRegion, arg(assumes[0], "--region"))
}
