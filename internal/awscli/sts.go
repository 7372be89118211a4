package awscli

import (
	"context"
	"encoding/json"
	"fmt"
)

// Call runs `aws <args>` as its caller's credentials reach AWS, with env
// laid over them ("NAME=" removes NAME: Environ), printing JSON.
type Call func(ctx context.Context, env []string, args ...string) ([]byte, error)

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
