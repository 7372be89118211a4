package awscli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Access is how a stack's aws provider reaches AWS, as the AWS CLI can be
// made to: its profile, then its one role (aws:assumeRole: pulumi-aws v6
// takes no chain, sdk/go/aws/provider.go at v6.83.4; a kubeconfig's role
// goes here too), with the settings the CLI reads from its environment.
type Access struct {
	Profile string `json:"profile,omitempty"`
	Role    *Role  `json:"role,omitempty"`
	// Env are the CLI's variables for the provider's CA bundle, proxies
	// and endpoint variants (settingsEnv).
	Env map[string]string `json:"env,omitempty"`
}

// Role is pulumi-aws v6's assumeRole (sdk/go/aws/config, AssumeRole, at
// v6.83.4): every field the CLI's `sts assume-role` takes too.
type Role struct {
	RoleArn           string            `json:"roleArn"`
	ExternalID        string            `json:"externalId,omitempty"`
	SessionName       string            `json:"sessionName,omitempty"`
	Duration          string            `json:"duration,omitempty"`
	Policy            string            `json:"policy,omitempty"`
	PolicyArns        []string          `json:"policyArns,omitempty"`
	Tags              map[string]string `json:"tags,omitempty"`
	TransitiveTagKeys []string          `json:"transitiveTagKeys,omitempty"`
	SourceIdentity    string            `json:"sourceIdentity,omitempty"`
}

// unreproducible are the provider's settings the CLI cannot be given as
// the provider uses them, each with why.
var unreproducible = map[string]string{
	"accessKey": "static keys in the stack's config would be written into the command's environment, in the state; put them in " +
		"the environment (AWS_ACCESS_KEY_ID and the rest), where the provider and the AWS CLI both read them, or in a profile",
	"secretKey": "as accessKey",
	"token":     "as accessKey",
	"sharedCredentialsFiles": "the AWS CLI reads its own files (AWS_SHARED_CREDENTIALS_FILE); set that variable instead, which the " +
		"provider reads too",
	"sharedConfigFiles":         "as sharedCredentialsFiles (AWS_CONFIG_FILE)",
	"assumeRoleWithWebIdentity": "the AWS CLI cannot be given a web identity session per call; use a profile with web_identity_token_file",
	"endpoints":                 "the AWS CLI here cannot be given an endpoint per service; the audit would ask AWS's own",
}

// settingsEnv are the provider settings the CLI reads from a variable of
// its own (botocore's config variables).
var settingsEnv = map[string]string{
	"customCaBundle": "AWS_CA_BUNDLE", "httpProxy": "HTTP_PROXY", "httpsProxy": "HTTPS_PROXY", "noProxy": "NO_PROXY",
	"useFipsEndpoint": "AWS_USE_FIPS_ENDPOINT", "useDualstackEndpoint": "AWS_USE_DUALSTACK_ENDPOINT",
}

// CredentialKeys are the provider settings AccessOf reads.
func CredentialKeys() []string {
	return slices.Sorted(slices.Values(append(append([]string{"profile", "assumeRole"}, slices.Collect(maps.Keys(unreproducible))...),
		slices.Collect(maps.Keys(settingsEnv))...)))
}

// AccessOf reads a provider's settings, by their keys (CredentialKeys), as
// stack config gives them (strings, JSON for objects) or as the state
// holds a provider's inputs. prefix is how a message names a key ("aws:"
// for config). It names the first setting the CLI cannot be given.
func AccessOf(settings map[string]any, prefix string) (Access, error) {
	for _, key := range slices.Sorted(maps.Keys(unreproducible)) {
		if v, ok := settings[key]; ok && v != nil && v != "" {
			return Access{}, fmt.Errorf("%s%s is set, which the AWS CLI that the destroy's leftover audit and the recovery run "+
				"cannot reproduce: %s", prefix, key, unreproducible[key])
		}
	}
	a := Access{}
	if p, ok := settings["profile"].(string); ok {
		a.Profile = p
	}
	for key, name := range settingsEnv {
		switch v := settings[key].(type) {
		case string:
			if v != "" {
				a.set(name, v)
			}
		case bool:
			if v {
				a.set(name, "true")
			}
		}
	}
	v := settings["assumeRole"]
	if s, ok := v.(string); ok {
		if s == "" {
			return a, nil
		}
		v = json.RawMessage(s)
	}
	if v == nil {
		return a, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return Access{}, fmt.Errorf("%sassumeRole: %w", prefix, err)
	}
	var r Role
	if err := json.Unmarshal(raw, &r); err != nil {
		return Access{}, fmt.Errorf("%sassumeRole is not what pulumi-aws reads (%v): %s", prefix, err, raw)
	}
	if r.RoleArn == "" {
		return Access{}, fmt.Errorf("%sassumeRole has no roleArn", prefix)
	}
	if r.Duration != "" {
		if _, err := time.ParseDuration(r.Duration); err != nil {
			return Access{}, fmt.Errorf("%sassumeRole: duration %q is not a duration such as 1h: %v", prefix, r.Duration, err)
		}
	}
	a.Role = &r
	return a, nil
}

func (a *Access) set(name, value string) {
	if a.Env == nil {
		a.Env = map[string]string{}
	}
	a.Env[name] = value
}

// args are the CLI's `sts assume-role` arguments for r.
func (r Role) args(session string) []string {
	args := []string{"sts", "assume-role", "--role-arn", r.RoleArn, "--role-session-name", cmp.Or(r.SessionName, session)}
	if r.ExternalID != "" {
		args = append(args, "--external-id", r.ExternalID)
	}
	if r.Duration != "" {
		d, _ := time.ParseDuration(r.Duration) // checked by AccessOf
		args = append(args, "--duration-seconds", strconv.Itoa(int(d.Seconds())))
	}
	if r.Policy != "" {
		args = append(args, "--policy", r.Policy)
	}
	if len(r.PolicyArns) > 0 {
		args = append(args, "--policy-arns")
		for _, arn := range r.PolicyArns {
			args = append(args, "arn="+arn)
		}
	}
	if len(r.Tags) > 0 {
		args = append(args, "--tags")
		for _, k := range slices.Sorted(maps.Keys(r.Tags)) {
			args = append(args, "Key="+k+",Value="+r.Tags[k])
		}
	}
	if len(r.TransitiveTagKeys) > 0 {
		args = append(append(args, "--transitive-tag-keys"), r.TransitiveTagKeys...)
	}
	if r.SourceIdentity != "" {
		args = append(args, "--source-identity", r.SourceIdentity)
	}
	return args
}

// Environ is the environment the CLI's calls run with to reach AWS as
// the provider does: its settings' variables and profile, then a session
// of each role, each assumed with the one before's (session, the session
// name of a role that names none). The profile goes once a role is
// assumed ("AWS_PROFILE="), so that the session's keys sign every later
// call.
func (a Access) Environ(ctx context.Context, aws Call, session string) ([]string, error) {
	var settings []string
	for _, name := range slices.Sorted(maps.Keys(a.Env)) {
		settings = append(settings, name+"="+a.Env[name])
	}
	env := slices.Clone(settings)
	if a.Profile != "" {
		// The profile alone, as the provider given aws:profile: botocore
		// prefers the environment's keys to a profile named by AWS_PROFILE
		// (credentials.py, create_credential_resolver).
		env = append(env, "AWS_PROFILE="+a.Profile, "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_SESSION_TOKEN=")
	}
	if a.Role == nil {
		return env, nil
	}
	out, err := aws(ctx, env, a.Role.args(session)...)
	if err != nil {
		return nil, err
	}
	var s struct {
		Credentials struct{ AccessKeyId, SecretAccessKey, SessionToken string }
	}
	if err := json.Unmarshal(out, &s); err != nil || s.Credentials.AccessKeyId == "" {
		return nil, fmt.Errorf("aws sts assume-role --role-arn %s printed no credentials", a.Role.RoleArn)
	}
	return append(settings, "AWS_ACCESS_KEY_ID="+s.Credentials.AccessKeyId, "AWS_SECRET_ACCESS_KEY="+s.Credentials.SecretAccessKey,
		"AWS_SESSION_TOKEN="+s.Credentials.SessionToken, "AWS_PROFILE="), nil
}

// String is the access as a message names it.
func (a Access) String() string {
	var parts []string
	if a.Profile != "" {
		parts = append(parts, "profile "+a.Profile)
	}
	if a.Role != nil {
		parts = append(parts, "role "+a.Role.RoleArn)
	}
	if len(parts) == 0 {
		return "the environment's credentials"
	}
	return strings.Join(parts, ", then ")
}
