package recovery

import (
	"nodeless-eks/internal/awscli"

	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"nodeless-eks/internal/bounds"
	"nodeless-eks/internal/poll"
)

func clusterOp() Operation {
	return pendingCreate("aws:eks/cluster:Cluster", "eks-demo-eksCluster", map[string]any{"name": "eks-demo",
		"roleArn": "arn:aws:iam::123456789012:role/eks-demo-cluster"})
}

func TestClusterStillCreatingIsWaitedFor(t *testing.T) {
	f := newFixture(t)
	asked := 0
	f.aws.on("eks describe-cluster", func([]string) awsAnswer {
		asked++
		status := "CREATING"
		if asked > 3 {
			status = "ACTIVE"
		}
		return awsAnswer{out: map[string]any{"cluster": map[string]any{"status": status, "roleArn": "arn:aws:iam::123456789012:role/eks-demo-cluster",
			"createdAt": testCreated}}}
	})
	v := verdictOf(t, f, state(clusterOp()))
	assert.Equal(t, Import, v.Outcome, v.Why)
	assert.Equal(t, "eks-demo", v.ID)
	assert.Equal(t, 4, asked, "asked until ACTIVE")
}

func TestClusterThatIsNotTheCreatesIsReported(t *testing.T) {
	for status, want := range map[string]string{
		"ACTIVE": "exists with role arn:aws:iam::123456789012:role/someone-else, not arn:aws:iam::123456789012:role/eks-demo-cluster",
		"FAILED": "aws eks delete-cluster --name eks-demo --region eu-west-1",
	} {
		f := newFixture(t)
		role := "arn:aws:iam::123456789012:role/eks-demo-cluster"
		if status == "ACTIVE" {
			role = "arn:aws:iam::123456789012:role/someone-else"
		}
		f.aws.answer("eks describe-cluster", map[string]any{"cluster": map[string]any{"status": status, "roleArn": role}})
		v := verdictOf(t, f, state(clusterOp()))
		assert.Equal(t, Undecided, v.Outcome)
		assert.Contains(t, v.Why, want)
	}
}

func TestAddonStates(t *testing.T) {
	op := pendingCreate("aws:eks/addon:Addon", "eks-demo-addons-coredns", map[string]any{"clusterName": "eks-demo", "addonName": "coredns"})
	f := newFixture(t)
	f.aws.answer("eks describe-addon", map[string]any{"addon": map[string]any{"status": "CREATING", "createdAt": testCreated,
		"health": map[string]any{"issues": []any{map[string]any{"code": "InsufficientNumberOfReplicas", "message": "no nodes"}}}}})
	v := verdictOf(t, f, state(op))
	assert.Equal(t, Import, v.Outcome)
	assert.Contains(t, v.Why, "EKS says it is CREATING (InsufficientNumberOfReplicas: no nodes)", "the report says what the next run will not wait for")

	f = newFixture(t)
	f.aws.answer("eks describe-addon", map[string]any{"addon": map[string]any{"status": "CREATE_FAILED"}})
	v = verdictOf(t, f, state(op))
	assert.Equal(t, Undecided, v.Outcome)
	assert.Contains(t, v.Why, "aws eks delete-addon --cluster-name eks-demo --addon-name coredns")
}

func releaseOp(typ string) Operation {
	op := pendingCreate(helmRelease, "eks-demo-karpenter-controller", map[string]any{"name": "karpenter", "namespace": "karpenter", "chart": "karpenter"})
	op.Type = typ
	return op
}

// TestAHelmReleaseIsAPersonsToDecide: a cut-off install is reported with
// the command that deletes its record and the -import and -clear lines,
// and nothing in the cluster is read; a cut-off upgrade is the next run's,
// whose Helm names `helm rollback` if it refuses.
func TestAHelmReleaseIsAPersonsToDecide(t *testing.T) {
	f := newFixture(t)
	v := verdictOf(t, f, state(releaseOp(Creating)))
	assert.Equal(t, Undecided, v.Outcome, v.Why)
	assert.Contains(t, v.Next, "`kubectl delete secret -n karpenter -l owner=helm,name=karpenter,status=pending-install` first")
	assert.Contains(t, v.Next, "-import '"+releaseOp(Creating).Resource.URN+"=<ID>'")
	assert.Contains(t, v.Next, "name karpenter, namespace karpenter")
	v = verdictOf(t, f, state(releaseOp(Updating)))
	assert.Equal(t, Retry, v.Outcome, v.Why)
	assert.Empty(t, f.aws.calls, "nothing is asked")
}

func TestWhatIsNotACreate(t *testing.T) {
	f := newFixture(t) // no AWS answers: nothing may be asked
	update := pendingCreate("aws:sqs/queue:Queue", "q", map[string]any{"name": "q"})
	update.Type = Updating
	del := pendingCreate("aws:iam/role:Role", "r", map[string]any{"name": "r"})
	del.Type = Deleting
	d := state(update, del)
	d.Resources = append(d.Resources, update.Resource, del.Resource)
	verdicts, err := Plan(context.Background(), d, f.lookups(), Options{Since: testSince})
	require.NoError(t, err)
	for _, v := range verdicts {
		assert.Equal(t, Retry, v.Outcome)
		assert.Contains(t, v.Next, "the next `pulumi up` performs it again")
	}
	assert.Empty(t, f.aws.calls)
	assert.True(t, Decided(verdicts))
}

func TestWhatTheRecoveryDoesNotGuess(t *testing.T) {
	f := newFixture(t)
	unknown := pendingCreate("aws:s3/bucket:Bucket", "b", map[string]any{"bucket": "b"})
	d := state(unknown)
	calls := len(f.aws.calls)
	verdicts, err := Plan(context.Background(), d, f.lookups(), Options{Since: testSince})
	require.NoError(t, err)
	require.Len(t, verdicts, 1)
	assert.Equal(t, Undecided, verdicts[0].Outcome)
	assert.Contains(t, verdicts[0].Why, "the recovery decides this type by no lookup")
	assert.Len(t, f.aws.calls, calls)
	assert.False(t, Decided(verdicts))
}

// TestAPendingCreateTheStateAlsoHolds: the usual case after a `pulumi up`
// ran once more before the recovery (pending creates stay, and the up
// created the resource anew), and a replacement cut off alike. -import is
// never offered (`pulumi stack import` refuses a second resource of one
// URN), and -clear only once the object the cut-off create left is known:
// none, or the one the state holds, is cleared; another is named, for a
// person; and -import of such a URN is refused.
func TestAPendingCreateTheStateAlsoHolds(t *testing.T) {
	again := func() (*Deployment, Operation) {
		op := pendingCreate("aws:sqs/queue:Queue", "r", map[string]any{"name": "r-2"})
		d := state(op)
		d.Resources = append(d.Resources, Resource{URN: op.Resource.URN, Type: "aws:sqs/queue:Queue", Custom: true, ID: queueURL("r-1"),
			Provider: op.Resource.Provider, Outputs: map[string]any{"arn": "arn:aws:sqs:eu-west-1:123456789012:r-1"}})
		return d, op
	}
	t.Run("the cut-off create left nothing", func(t *testing.T) {
		f := newFixture(t)
		f.aws.refuse("sqs get-queue-url", "AWS.SimpleQueueService.NonExistentQueue")
		d, _ := again()
		verdicts, err := Plan(context.Background(), d, f.lookups(), Options{Since: testSince})
		require.NoError(t, err)
		assert.Equal(t, Clear, verdicts[0].Outcome, verdicts[0].Why)
		assert.Contains(t, verdicts[0].Why, "the state holds this URN's resource ("+queueURL("r-1")+"), and the cut-off create left no other")
	})
	t.Run("it left another object: named, never imported", func(t *testing.T) {
		f := newFixture(t)
		f.queueExists("r-2")
		d, op := again()
		verdicts, err := Plan(context.Background(), d, f.lookups(), Options{Since: testSince})
		require.NoError(t, err)
		v := verdicts[0]
		assert.Equal(t, Undecided, v.Outcome)
		assert.Contains(t, v.Why, "the cut-off create left "+queueURL("r-2")+", beside "+queueURL("r-1")+", which the state holds under this URN")
		assert.Contains(t, v.Next, "delete "+queueURL("r-2")+" if nothing uses it, or adopt it under another name (`pulumi import aws:sqs/queue:Queue <name> "+queueURL("r-2")+"`)")
		assert.Contains(t, v.Next, "-clear '"+op.Resource.URN+"'")
		assert.NotContains(t, v.Next, "-import", "stack import would refuse it")

		_, err = Plan(context.Background(), d, f.lookups(), Options{Since: testSince, Decisions: map[string]Decision{op.Resource.URN: {Import: true, ID: queueURL("r-2")}}})
		require.Error(t, err, "-import of a URN the state holds is refused")
		assert.Contains(t, err.Error(), "the state already holds a resource of that URN, and `pulumi stack import` refuses a second one")
		verdicts, err = Plan(context.Background(), d, f.lookups(), Options{Since: testSince, Decisions: map[string]Decision{op.Resource.URN: {}}})
		require.NoError(t, err)
		assert.Equal(t, Clear, verdicts[0].Outcome, "a person's -clear, once they dealt with it")
	})
	t.Run("the object the state holds is no orphan", func(t *testing.T) {
		f := newFixture(t)
		f.queueExists("r-1")
		d, op := again()
		op.Resource.Inputs["name"] = "r-1"
		d.PendingOperations[0] = op
		verdicts, err := Plan(context.Background(), d, f.lookups(), Options{Since: testSince})
		require.NoError(t, err)
		assert.Equal(t, Clear, verdicts[0].Outcome, verdicts[0].Why)
	})
}

func TestProviderOfAnotherAccount(t *testing.T) {
	f := newFixture(t)
	f.queueExists("r", "r-1", "deploy-prod")
	op := pendingCreate("aws:sqs/queue:Queue", "r", map[string]any{"name": "deploy-prod"})
	provider := testStack + "pulumi:providers:aws::account-prod"
	op.Resource.Provider = provider + "::p2"
	d := state(op)
	// deploy/'s providers hold lists and objects as JSON strings.
	d.Resources = append(d.Resources, Resource{URN: provider, Type: "pulumi:providers:aws", Custom: true, ID: "p2", Inputs: map[string]any{
		"region": testRegion, "allowedAccountIds": `["444455556666"]`, "assumeRole": `{"roleArn":"arn:aws:iam::444455556666:role/deploy-admin"}`}})
	v := verdictOf(t, f, d)
	assert.Equal(t, Import, v.Outcome, v.Why)
	assert.Contains(t, f.aws.calls, "sts assume-role --role-arn arn:aws:iam::444455556666:role/deploy-admin --role-session-name nodeless-eks-recover-pending")
	for i, call := range f.aws.calls {
		if strings.HasPrefix(call, "sqs get-queue-url") {
			assert.Contains(t, f.aws.envs[i], "AWS_ACCESS_KEY_ID=ASIA-ASSUMED", "the lookup runs as the provider's role")
		}
	}

	f = newFixture(t)
	op.Resource.Provider = awsProviderURN + "::prov-id"
	d = state(op)
	d.Resources[0].Inputs["allowedAccountIds"] = []any{"444455556666"}
	v = verdictOf(t, f, d)
	assert.Equal(t, Undecided, v.Outcome)
	assert.Contains(t, v.Why, "the AWS credentials are for account 123456789012, and the resource's provider reaches 444455556666")
	assert.False(t, slices.Contains(f.aws.calls, "sqs get-queue-url --queue-name deploy-prod"), "nothing is read in the wrong account")
}

func TestLooksOnlyAfterAWSSettles(t *testing.T) {
	f := newFixture(t)
	f.aws.refuse("sqs get-queue-url", "AWS.SimpleQueueService.NonExistentQueue")
	d := state(pendingCreate("aws:sqs/queue:Queue", "r", map[string]any{"name": "r"}))
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	d.Manifest.Time = now.Add(-30 * time.Second)
	var slept time.Duration
	_, err := Plan(context.Background(), d, f.lookups(), Options{Settle: bounds.RecoverySettle, Now: func() time.Time { return now },
		Sleep: func(_ context.Context, d time.Duration) error { slept = d; return nil }})
	require.NoError(t, err)
	assert.Equal(t, 90*time.Second, slept, "two minutes after the state's last write")

	slept = 0
	d.Manifest.Time = now.Add(-time.Hour)
	_, err = Plan(context.Background(), d, f.lookups(), Options{Settle: bounds.RecoverySettle, Now: func() time.Time { return now },
		Sleep: func(_ context.Context, d time.Duration) error { slept = d; return nil }})
	require.NoError(t, err)
	assert.Zero(t, slept, "an interruption long ago needs no wait")
}

func TestDecisionsByHand(t *testing.T) {
	f := newFixture(t) // no AWS answers: nothing may be asked
	role := pendingCreate("aws:sqs/queue:Queue", "r", map[string]any{"name": "r-1"})
	queue := pendingCreate("aws:ec2/natGateway:NatGateway", "q", map[string]any{"subnetId": "subnet-1"})
	verdicts, err := Plan(context.Background(), state(role, queue), f.lookups(), Options{Since: testSince, Decisions: map[string]Decision{
		role.Resource.URN: {Import: true, ID: queueURL("r-1")}, queue.Resource.URN: {}}})
	require.NoError(t, err)
	assert.Equal(t, Import, verdicts[0].Outcome)
	assert.Equal(t, queueURL("r-1"), verdicts[0].ID)
	assert.Equal(t, Clear, verdicts[1].Outcome)
	// The edit cannot be undone (stack import drops pending operations):
	// an -import's ID is looked up first; a lookup that cannot answer
	// (here: no answers at all) leaves the person's word.
	assert.Contains(t, f.aws.calls, "sqs get-queue-url --queue-name r-1")
	assert.NotContains(t, strings.Join(f.aws.calls, "\n"), "ec2", "a -clear needs no lookup")

	f.aws.refuse("sqs get-queue-url", "AWS.SimpleQueueService.NonExistentQueue")
	_, err = Plan(context.Background(), state(role), f.lookups(), Options{Since: testSince, Decisions: map[string]Decision{role.Resource.URN: {Import: true, ID: queueURL("r-1")}}})
	require.Error(t, err, "an ID the lookup proves absent is refused before the state is edited")
	assert.Contains(t, err.Error(), "-import "+role.Resource.URN+"="+queueURL("r-1")+": the recovery's lookup finds no such object")
	f.queueExists("r-1")
	_, err = Plan(context.Background(), state(role), f.lookups(), Options{Since: testSince, Decisions: map[string]Decision{role.Resource.URN: {Import: true, ID: "r-typo"}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the object the cut-off create left is "+queueURL("r-1")+", not r-typo")

	_, err = Plan(context.Background(), state(role), f.lookups(), Options{Since: testSince, Decisions: map[string]Decision{queue.Resource.URN: {}}})
	assert.ErrorContains(t, err, "has no pending create to decide", "a decision for nothing pending is a typo")
}

// TestNoProofOfTheAccount: a "not found" from another account than the
// stack's would clear an object that exists.
func TestNoProofOfTheAccount(t *testing.T) {
	f := newFixture(t)
	f.aws.refuse("sqs get-queue-url", "AWS.SimpleQueueService.NonExistentQueue")
	op := pendingCreate("aws:sqs/queue:Queue", "r", map[string]any{"name": "r-1"})
	d := state(op)
	d.Resources = d.Resources[:1] // no resource whose ARN names the account
	v := verdictOf(t, f, d)
	assert.Equal(t, Undecided, v.Outcome)
	assert.Contains(t, v.Why, "nothing in the state names the AWS account of its provider")
	assert.NotContains(t, f.aws.calls, "sqs get-queue-url --queue-name r-1")

	f = newFixture(t)
	f.aws.refuse("sqs get-queue-url", "AWS.SimpleQueueService.NonExistentQueue")
	f.aws.account = "999999999999" // ambient credentials of another account
	v = verdictOf(t, f, state(op))
	assert.Equal(t, Undecided, v.Outcome)
	assert.Contains(t, v.Why, "the AWS credentials are for account 999999999999, and the resource's provider reaches 123456789012")
	assert.NotContains(t, f.aws.calls, "sqs get-queue-url --queue-name r-1")

	f = newFixture(t)
	d = state(op)
	d.Resources[0].Inputs["accessKey"] = "AKIA..."
	v = verdictOf(t, f, d)
	assert.Equal(t, Undecided, v.Outcome)
	assert.Contains(t, v.Why, "the provider's accessKey is set, which the AWS CLI that the destroy's leftover audit and the recovery run cannot reproduce")

	f = newFixture(t)
	f.queueExists("r", "r-1", "deploy-prod")
	d = state(op)
	d.Resources[0].Inputs["profile"] = "prod-admin"
	v = verdictOf(t, f, d)
	assert.Equal(t, Import, v.Outcome)
	for _, env := range f.aws.envs {
		assert.Contains(t, env, "AWS_PROFILE=prod-admin", "every call uses the provider's profile")
	}
}

// TestTheRecoveryReachesAWSAsTheProviderDoes: one row per setting of
// pulumi-aws v6 that decides how it reaches AWS (awscli.CredentialKeys,
// each field of its role): the recovery assumes the provider's role with
// every field the provider sends STS, and asks as it, with the provider's
// CA bundle, proxies and endpoint variants; a setting the AWS CLI cannot
// be given makes it unable to tell, and it asks AWS nothing.
func TestTheRecoveryReachesAWSAsTheProviderDoes(t *testing.T) {
	const a = "arn:aws:iam::123456789012:role/a"
	assume := func(arn string, extra ...string) string {
		return strings.Join(append([]string{"sts assume-role --role-arn", arn, "--role-session-name nodeless-eks-recover-pending"}, extra...), " ")
	}
	rows := []struct {
		name, key string
		value     any
		calls     []string // the STS calls, in order, before the lookup's
		env       string   // a variable every call has
		refused   string
	}{
		{name: "profile", key: "profile", value: "prod-admin"},
		{name: "assumeRole.roleArn", key: "assumeRole", value: `{"roleArn":"` + a + `"}`, calls: []string{assume(a)}},
		{name: "assumeRole.externalId", key: "assumeRole", value: `{"roleArn":"` + a + `","externalId":"x"}`, calls: []string{assume(a, "--external-id x")}},
		{name: "assumeRole.sessionName", key: "assumeRole", value: `{"roleArn":"` + a + `","sessionName":"ci"}`,
			calls: []string{"sts assume-role --role-arn " + a + " --role-session-name ci"}},
		{name: "assumeRole.duration", key: "assumeRole", value: `{"roleArn":"` + a + `","duration":"1h"}`, calls: []string{assume(a, "--duration-seconds 3600")}},
		{name: "assumeRole.policy", key: "assumeRole", value: `{"roleArn":"` + a + `","policy":"{}"}`, calls: []string{assume(a, "--policy {}")}},
		{name: "assumeRole.policyArns", key: "assumeRole", value: map[string]any{"roleArn": a, "policyArns": []any{"arn:aws:iam::aws:policy/ReadOnlyAccess"}},
			calls: []string{assume(a, "--policy-arns arn=arn:aws:iam::aws:policy/ReadOnlyAccess")}},
		{name: "assumeRole.tags", key: "assumeRole", value: `{"roleArn":"` + a + `","tags":{"team":"platform"}}`, calls: []string{assume(a, "--tags Key=team,Value=platform")}},
		{name: "assumeRole.transitiveTagKeys", key: "assumeRole", value: `{"roleArn":"` + a + `","transitiveTagKeys":["team"]}`,
			calls: []string{assume(a, "--transitive-tag-keys team")}},
		{name: "assumeRole.sourceIdentity", key: "assumeRole", value: `{"roleArn":"` + a + `","sourceIdentity":"alice"}`, calls: []string{assume(a, "--source-identity alice")}},
		{name: "customCaBundle", key: "customCaBundle", value: "/etc/ca.pem", env: "AWS_CA_BUNDLE=/etc/ca.pem"},
		{name: "httpProxy", key: "httpProxy", value: "http://proxy:3128", env: "HTTP_PROXY=http://proxy:3128"},
		{name: "httpsProxy", key: "httpsProxy", value: "http://proxy:3128", env: "HTTPS_PROXY=http://proxy:3128"},
		{name: "noProxy", key: "noProxy", value: "169.254.169.254", env: "NO_PROXY=169.254.169.254"},
		{name: "useFipsEndpoint", key: "useFipsEndpoint", value: true, env: "AWS_USE_FIPS_ENDPOINT=true"},
		{name: "useDualstackEndpoint", key: "useDualstackEndpoint", value: "true", env: "AWS_USE_DUALSTACK_ENDPOINT=true"},
		{name: "endpoints", key: "endpoints", value: `[{"sts":"http://localhost:4566"}]`, refused: "the provider's endpoints is set"},
		{name: "accessKey", key: "accessKey", value: "AKIA", refused: "the provider's accessKey is set"},
		{name: "secretKey", key: "secretKey", value: "s", refused: "the provider's secretKey is set"},
		{name: "token", key: "token", value: "t", refused: "the provider's token is set"},
		{name: "sharedCredentialsFiles", key: "sharedCredentialsFiles", value: `["/x"]`, refused: "the provider's sharedCredentialsFiles is set"},
		{name: "sharedConfigFiles", key: "sharedConfigFiles", value: `["/x"]`, refused: "the provider's sharedConfigFiles is set"},
		{name: "assumeRoleWithWebIdentity", key: "assumeRoleWithWebIdentity", value: `{"roleArn":"` + a + `"}`,
			refused: "the provider's assumeRoleWithWebIdentity is set"},
	}
	covered := map[string]bool{}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			covered[row.key] = true
			f := newFixture(t)
			f.queueExists("r", "r-1", "deploy-prod")
			d := state(pendingCreate("aws:sqs/queue:Queue", "r", map[string]any{"name": "r-1"}))
			d.Resources[0].Inputs[row.key] = row.value
			v := verdictOf(t, f, d)
			if row.refused != "" {
				assert.Equal(t, Undecided, v.Outcome)
				assert.Contains(t, v.Why, row.refused)
				assert.Empty(t, f.aws.calls, "nothing is asked as another identity")
				return
			}
			var sts []string
			for _, c := range f.aws.calls {
				if strings.HasPrefix(c, "sts assume-role") {
					sts = append(sts, c)
				}
			}
			assert.Equal(t, row.calls, sts)
			if row.key == "profile" {
				assert.Contains(t, f.aws.envs[0], "AWS_PROFILE=prod-admin")
				assert.Contains(t, f.aws.envs[0], "AWS_ACCESS_KEY_ID=", "the shell's keys would win over AWS_PROFILE")
			}
			if row.env != "" {
				for _, env := range f.aws.envs {
					assert.Contains(t, env, row.env)
				}
			}
		})
	}
	for _, key := range awscli.CredentialKeys() {
		assert.True(t, covered[key], "a row for %s", key)
	}
}

// TestNoReportAdvisesClearingEveryPendingCreate: what a finder says to do
// before a create is cleared ends with the recovery's own -clear of that
// URN, never Pulumi's flag that clears every pending create, those whose
// object exists too.
func TestNoReportAdvisesClearingEveryPendingCreate(t *testing.T) {
	fargate := pendingCreate("aws:eks/fargateProfile:FargateProfile", "eks-demo-karpenter",
		map[string]any{"clusterName": "eks-demo", "fargateProfileName": "eks-demo-karpenter-6b7c8d9"})
	addon := pendingCreate("aws:eks/addon:Addon", "eks-demo-addons-coredns", map[string]any{"clusterName": "eks-demo", "addonName": "coredns"})
	f := newFixture(t)
	f.aws.answer("eks describe-cluster", map[string]any{"cluster": map[string]any{"status": "FAILED",
		"roleArn": "arn:aws:iam::123456789012:role/eks-demo-cluster"}})
	f.aws.answer("eks describe-fargate-profile", map[string]any{"fargateProfile": map[string]any{"status": "CREATE_FAILED"}})
	f.aws.answer("eks describe-addon", map[string]any{"addon": map[string]any{"status": "CREATE_FAILED"}})
	verdicts, err := Plan(context.Background(), state(clusterOp(), fargate, addon), f.lookups(), Options{Since: testSince})
	require.NoError(t, err)
	require.Len(t, verdicts, 3)
	var report bytes.Buffer
	Report(&report, "dev", verdicts)
	for _, v := range verdicts {
		assert.Equal(t, Undecided, v.Outcome, v.Why)
		assert.Contains(t, v.Why, "then clear its pending create with the -clear command below")
		assert.Contains(t, report.String(), "go run ./cmd/recover-pending -stack dev -clear '"+v.Op.Resource.URN+"'")
	}
	assert.NotContains(t, report.String(), "--clear-pending-creates")
}

// quickWaits bounds every wait to milliseconds.
type quickWaits struct{ *CLILookups }

func (quickWaits) Wait(ctx context.Context, _ time.Duration, cond func(context.Context) (bool, string, error)) error {
	return poll.Until(ctx, 20*time.Millisecond, time.Millisecond, cond)
}

// TestClusterWaitSaysWhyItStopped: only a cluster still CREATING when the
// bound runs out is reported as such; a describe that fails says its
// error, and a recovery that is stopped says so.
func TestClusterWaitSaysWhyItStopped(t *testing.T) {
	creating := map[string]any{"cluster": map[string]any{"status": "CREATING", "roleArn": "arn:aws:iam::123456789012:role/eks-demo-cluster"}}
	plan := func(ctx context.Context, f *fixture) Verdict {
		t.Helper()
		verdicts, err := Plan(ctx, state(clusterOp()), quickWaits{f.lookups()}, Options{Since: testSince})
		require.NoError(t, err)
		require.Len(t, verdicts, 1)
		assert.Equal(t, Undecided, verdicts[0].Outcome)
		return verdicts[0]
	}

	f := newFixture(t)
	f.aws.answer("eks describe-cluster", creating)
	v := plan(context.Background(), f)
	assert.Contains(t, v.Why, "the cluster was still CREATING after the recovery waited "+bounds.RecoveryCluster.String())

	f = newFixture(t)
	asked := 0
	f.aws.on("eks describe-cluster", func([]string) awsAnswer {
		if asked++; asked > 2 {
			return awsAnswer{code: "AccessDeniedException"}
		}
		return awsAnswer{out: creating}
	})
	v = plan(context.Background(), f)
	assert.Contains(t, v.Why, "AccessDeniedException")
	assert.NotContains(t, v.Why, "still CREATING")

	f = newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	asked = 0
	f.aws.on("eks describe-cluster", func([]string) awsAnswer {
		if asked++; asked > 1 {
			cancel() // the recovery is stopped while it waits
		}
		return awsAnswer{out: creating}
	})
	v = plan(ctx, f)
	assert.Contains(t, v.Why, "the recovery stopped (context canceled) while the cluster was CREATING")
	assert.NotContains(t, v.Why, "still CREATING")
}

// TestNothingOlderThanTheUpdateIsAdopted: an object of the create's name or
// tags made before the interrupted update began may be an earlier stack's
// leftover (a failed destroy of a stack of the same name); one whose API
// gives no creation time is never adopted, nor anything when the history
// says nothing.
func TestNothingOlderThanTheUpdateIsAdopted(t *testing.T) {
	f := newFixture(t)
	f.aws.answer("eks describe-cluster", map[string]any{"cluster": map[string]any{"status": "ACTIVE",
		"roleArn": "arn:aws:iam::123456789012:role/eks-demo-cluster", "createdAt": "2026-11-20T10:00:00Z"}})
	v := verdictOf(t, f, state(clusterOp()))
	assert.Equal(t, Undecided, v.Outcome)
	assert.Contains(t, v.Why, "eks-demo exists, but it was made 2026-11-20T10:00:00Z, before the interrupted update began (2026-12-01T08:00:00Z at the earliest)")
	assert.Contains(t, v.Next, "-import '"+clusterOp().Resource.URN+"=<ID>'")

	f = newFixture(t)
	f.aws.answer("eks describe-cluster", map[string]any{"cluster": map[string]any{"status": "ACTIVE",
		"roleArn": "arn:aws:iam::123456789012:role/eks-demo-cluster", "createdAt": testCreated}})
	verdicts, err := Plan(context.Background(), state(clusterOp()), f.lookups(), Options{}) // no history
	require.NoError(t, err)
	assert.Equal(t, Undecided, verdicts[0].Outcome)
	assert.Contains(t, verdicts[0].Why, "the stack's history says nothing of when the interrupted update began")
}
