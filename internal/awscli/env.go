package awscli

import "strings"

// Environ is base with extra laid over it: each "NAME=value" of extra
// replaces NAME in base, and "NAME=" removes it. The AWS CLI reads a
// variable that is set but empty as a value: AWS_PROFILE= is a profile
// named "" ("The config profile () could not be found", aws-cli v1.45 as
// run against moto), so a session's credentials drop the profile by
// removing it.
func Environ(base []string, extra ...string) []string {
	// The last of extra's values of a name wins, as in exec's Env.
	last := map[string]int{}
	for i, e := range extra {
		name, _, _ := strings.Cut(e, "=")
		last[name] = i
	}
	out := make([]string, 0, len(base)+len(extra))
	for _, e := range base {
		if name, _, _ := strings.Cut(e, "="); !has(last, name) {
			out = append(out, e)
		}
	}
	for i, e := range extra {
		if name, value, _ := strings.Cut(e, "="); last[name] == i && value != "" {
			out = append(out, e)
		}
	}
	return out
}

func has(m map[string]int, k string) bool { _, ok := m[k]; return ok }
