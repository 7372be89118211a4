package awscli

import (
	"context"
	"encoding/json"
	"fmt"
)

// Call runs `aws <args>` as its caller's credentials reach AWS, with env
// laid over them ("NAME=" removes NAME: Environ), printing JSON.
type Call func(ctx context.Context, env []string, args ...string) ([]byte, error)

// AssumeRole is the environment of a session of roleArn, as `aws sts
// assume-role` gives it; the profile goes ("AWS_PROFILE=") so that the
// session's keys, not the profile's, sign every later call. Only the
// role's ARN is passed: a caller whose role needs more (an externalId, a
// session policy, a chain) must refuse it before.
func AssumeRole(ctx context.Context, aws Call, env []string, roleArn, sessionName string) ([]string, error) {
	out, err := aws(ctx, env, "sts", "assume-role", "--role-arn", roleArn, "--role-session-name", sessionName)
	if err != nil {
		return nil, err
	}
	var s struct {
		Credentials struct{ AccessKeyId, SecretAccessKey, SessionToken string }
	}
	if err := json.Unmarshal(out, &s); err != nil || s.Credentials.AccessKeyId == "" {
		return nil, fmt.Errorf("aws sts assume-role --role-arn %s printed no credentials", roleArn)
	}
	return []string{"AWS_ACCESS_KEY_ID=" + s.Credentials.AccessKeyId, "AWS_SECRET_ACCESS_KEY=" + s.Credentials.SecretAccessKey,
		"AWS_SESSION_TOKEN=" + s.Credentials.SessionToken, "AWS_PROFILE="}, nil
}

// CallerIdentity is the account, and the ARN, that env's credentials are
// for (`aws sts get-caller-identity`, which needs no permission: the STS
// API reference). From another account every object is "not found", so
// each answer that clears, adopts or deletes counts only once this is the
// object's account.
func CallerIdentity(ctx context.Context, aws Call, env []string) (account, arn string, err error) {
	out, err := aws(ctx, env, "sts", "get-caller-identity")
	if err != nil {
		return "", "", err
	}
	var id struct{ Account, Arn string }
	if err := json.Unmarshal(out, &id); err != nil || id.Account == "" {
		return "", "", fmt.Errorf("aws sts get-caller-identity printed no account")
	}
	return id.Account, id.Arn, nil
}
