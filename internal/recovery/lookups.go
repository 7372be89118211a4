package recovery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"nodeless-eks/internal/awscli"
	"nodeless-eks/internal/poll"
)

// AWSAccess is how a resource's provider reaches AWS: its region, the
// profile and role it uses (none: the ambient credentials), and the
// accounts it allows (allowedAccountIds; none: any).
type AWSAccess struct {
	Region, Profile, RoleArn string
	Accounts                 []string
	// Unsupported are the provider's credential settings the recovery does
	// not reproduce (static keys, web identity): it then cannot tell.
	Unsupported []string
}

// key names the credentials of an access.
func (a AWSAccess) key() string { return a.Profile + "|" + a.RoleArn }

// Lookups answer what the finders ask of each backend.
type Lookups interface {
	// AWS runs the AWS CLI (`aws <args> --output json --region <region>`)
	// with the access's credentials and returns its output, or an
	// *AWSError.
	AWS(ctx context.Context, a AWSAccess, args ...string) ([]byte, error)
	// Account is the AWS account the access's credentials are for; an
	// error when it is not one the provider allows.
	Account(ctx context.Context, a AWSAccess) (string, error)
	// Wait polls cond every poll interval, up to bound.
	Wait(ctx context.Context, bound time.Duration, cond func(context.Context) (bool, string, error)) error
}

// AWSError is a failure of the AWS CLI: its exit status and, when AWS
// answered, the error code the CLI printed ("An error occurred
// (NoSuchEntity) when calling the GetRole operation: ...").
type AWSError struct {
	Args   []string
	Code   string
	Stderr string
	Err    error
}

func (e *AWSError) Error() string {
	return fmt.Sprintf("aws %s: %v: %s", strings.Join(e.Args, " "), e.Err, strings.TrimSpace(e.Stderr))
}

var awsErrorCode = regexp.MustCompile(`An error occurred \(([A-Za-z0-9_.]+)\)`)

// IsAWSCode reports an AWS error with one of codes: AWS's own answer that
// the object is not there, when the codes are the operation's "not found".
func IsAWSCode(err error, codes ...string) bool {
	var e *AWSError
	return errors.As(err, &e) && slices.Contains(codes, e.Code)
}

// Runner runs a command with extra environment and returns its standard
// output; the error comes with its standard error.
type Runner func(ctx context.Context, env []string, name string, args ...string) (stdout []byte, stderr string, err error)

// waitDelay is how long Exec waits, once the command exited or ctx ended,
// for output pipes that a child of the command still holds.
var waitDelay = 5 * time.Second

// Exec runs a command for real, in the environment of this process with
// env laid over it ("NAME=" removes NAME: awscli.Environ).
func Exec(ctx context.Context, env []string, name string, args ...string) ([]byte, string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = waitDelay                      // a child holding the output open is cut off (os/exec, Cmd.WaitDelay)
	cmd.Env = awscli.Environ(os.Environ(), env...) // "NAME=" unsets NAME
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.Bytes(), stderr.String(), err
}

// CLILookups answer through the AWS CLI.
type CLILookups struct {
	Run Runner
	// Poll is how often a wait asks again (30 s when zero).
	Poll time.Duration

	mu       sync.Mutex
	creds    map[string][]string // by AWSAccess.key: the environment of its calls
	accounts map[string]string   // by AWSAccess.key: the account
}

// env is the environment the access's calls run with: the ambient
// credentials, its profile's, or a session of its role (one per role and
// run).
func (l *CLILookups) env(ctx context.Context, a AWSAccess) ([]string, error) {
	var profile []string
	if a.Profile != "" {
		profile = []string{"AWS_PROFILE=" + a.Profile}
	}
	if a.RoleArn == "" {
		return profile, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if env, ok := l.creds[a.key()]; ok {
		return env, nil
	}
	// STS's regional endpoint, as the provider's own calls use it.
	env, err := awscli.AssumeRole(ctx, l.call(a.Region), profile, a.RoleArn, "nodeless-eks-recover-pending")
	if err != nil {
		return nil, err
	}
	if l.creds == nil {
		l.creds = map[string][]string{}
	}
	l.creds[a.key()] = env
	return env, nil
}

// call runs the AWS CLI in region.
func (l *CLILookups) call(region string) awscli.Call {
	return func(ctx context.Context, env []string, args ...string) ([]byte, error) {
		full := append(slices.Clone(args), "--output", "json")
		if region != "" {
			full = append(full, "--region", region)
		}
		out, stderr, err := l.Run(ctx, env, "aws", full...)
		if err != nil {
			e := &AWSError{Args: full, Stderr: stderr, Err: err}
			if m := awsErrorCode.FindStringSubmatch(stderr); m != nil {
				e.Code = m[1]
			}
			return nil, e
		}
		return out, nil
	}
}

// AWS runs the AWS CLI.
func (l *CLILookups) AWS(ctx context.Context, a AWSAccess, args ...string) ([]byte, error) {
	env, err := l.env(ctx, a)
	if err != nil {
		return nil, err
	}
	return l.call(a.Region)(ctx, env, args...)
}

// Account asks STS, once per credentials.
func (l *CLILookups) Account(ctx context.Context, a AWSAccess) (string, error) {
	l.mu.Lock()
	account, ok := l.accounts[a.key()]
	l.mu.Unlock()
	if !ok {
		env, err := l.env(ctx, a)
		if err != nil {
			return "", err
		}
		if account, _, err = awscli.CallerIdentity(ctx, l.call(a.Region), env); err != nil {
			return "", err
		}
		l.mu.Lock()
		if l.accounts == nil {
			l.accounts = map[string]string{}
		}
		l.accounts[a.key()] = account
		l.mu.Unlock()
	}
	if len(a.Accounts) > 0 && !slices.Contains(a.Accounts, account) {
		return "", fmt.Errorf("the AWS credentials are for account %s, and the resource's provider reaches %s: "+
			"run the recovery with credentials for that account", account, strings.Join(a.Accounts, ", "))
	}
	return account, nil
}

// Wait polls cond up to bound.
func (l *CLILookups) Wait(ctx context.Context, bound time.Duration, cond func(context.Context) (bool, string, error)) error {
	interval := l.Poll
	if interval == 0 {
		interval = 30 * time.Second
	}
	return poll.Until(ctx, bound, interval, cond)
}
