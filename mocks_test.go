package main

import (
	"errors"
	"os"
	"testing"
	"time"

	"nodeless-eks/internal/bootwatch"
	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/mock"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// testToday is the day the tests read the EKS support calendar against, so
// that they do not change as real days pass.
var testToday = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) {
	// Mocked stacks have no cluster to watch; watch_test.go gives one.
	bootAPI = func(string) (bootwatch.API, error) { return nil, errors.New("no cluster under mocks") }
	os.Exit(m.Run())
}

const (
	// exportTimeout bounds the waits of the tests' own; under mocks
	// everything resolves in milliseconds unless a registration failed.
	exportTimeout = 20 * time.Second
	testProject   = "nodeless-eks"
	testStack     = "dev"
	testAccount   = fakeaws.AccountID
)

// newRecorder is a mock engine for the dev stack whose account is acct.
func newRecorder(acct *fakeaws.Account) *mock.Recorder {
	return acct.Recorder(testProject, testStack)
}

// testProgram is the program on testToday.
func testProgram(ctx *pulumi.Context) error { return program(ctx, testToday) }

// stackRun is the outcome of running the real program under mocks.
type stackRun struct {
	rec *mock.Recorder
	// exports holds each stack output's resolved value.
	exports map[string]any
	// secretExports holds the names of the secret stack outputs.
	secretExports map[string]bool
	err           error
}

// runProgram runs program with cfg as the stack configuration (keys as in
// a stack file, objects and arrays as JSON) against vpc.
func runProgram(t *testing.T, cfg map[string]string, vpc fakeaws.Vpc) stackRun {
	t.Helper()
	return runProgramOn(t, cfg, vpc, "")
}

// runProgramOn is runProgram against a cluster that already runs
// runningVersion ("" for none).
func runProgramOn(t *testing.T, cfg map[string]string, vpc fakeaws.Vpc, runningVersion string) stackRun {
	t.Helper()
	acct := &fakeaws.Account{Vpc: vpc, ClusterName: cfg[testProject+":clusterName"], RunningVersion: runningVersion}
	return runStack(t, cfg, newRecorder(acct), false)
}

// runStack runs program with cfg against rec, as `pulumi up` runs it or,
// with preview, as a preview does.
func runStack(t *testing.T, cfg map[string]string, rec *mock.Recorder, preview bool) stackRun {
	t.Helper()
	res := rec.Run(t, cfg, preview, fakeaws.WithEKSStandIn(testProgram))
	return stackRun{rec: rec, exports: res.Exports, secretExports: res.SecretExports, err: res.Err}
}

// programRegistrations are what the program registered, without the
// test's stand-in.
func programRegistrations(rec *mock.Recorder) []*mock.Registration {
	return fakeaws.Registrations(rec)
}
