package recovery

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"nodeless-eks/internal/awscli"
	"nodeless-eks/internal/poll"
)

// AWSAccess is how a resource's provider reaches AWS: its region, its
// credentials (none: the ambient ones), and the accounts it allows
// (allowedAccountIds; none: any).
type AWSAccess struct {
	Region   string
	Creds    awscli.Access
	Accounts []string
	// Unreproducible names the provider's setting the recovery cannot
	// reproduce (awscli.AccessOf): it then cannot tell.
	Unreproducible error
}

// key names the credentials of an access.
func (a AWSAccess) key() string {
	raw, _ := json.Marshal(a.Creds)
	return string(raw)
}

// Lookups answer what the finders ask of each backend.
type Lookups interface {
	// AWS runs `aws <args> --output json --region <region>` with the
	// access's credentials: its output, or an *awscli.Error.
	AWS(ctx context.Context, a AWSAccess, args ...string) ([]byte, error)
	// Account is the access's AWS account; an error if the provider bars it.
	Account(ctx context.Context, a AWSAccess) (string, error)
	// Wait polls cond every poll interval, up to bound.
	Wait(ctx context.Context, bound time.Duration, cond func(context.Context) (bool, string, error)) error
}

// CLILookups answer through the AWS CLI.
type CLILookups struct {
	Run awscli.Runner
	// Poll is how often a wait asks again (30 s when zero).
	Poll time.Duration

	mu       sync.Mutex
	creds    map[string][]string // by AWSAccess.key: the environment of its calls
	accounts map[string]string   // by AWSAccess.key: the account
}

// env is the environment the access's calls run with: the ambient
// credentials, its profile's, or a session of its roles (one per
// credentials and run).
func (l *CLILookups) env(ctx context.Context, a AWSAccess) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if env, ok := l.creds[a.key()]; ok {
		return env, nil
	}
	// STS's regional endpoint, as the provider's own calls use it.
	env, err := a.Creds.Environ(ctx, l.call(a.Region), "nodeless-eks-recover-pending")
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
			return nil, awscli.NewError(full, stderr, err)
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
