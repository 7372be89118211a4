package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pconfig "github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// clusterExamples are the inputs of every Cluster the package's documents
// and examples show, by where they are: example/index.ts, and the
// TypeScript and YAML blocks of the README and of this package's page.
func clusterExamples(t *testing.T) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	raw, err := os.ReadFile("example/index.ts")
	require.NoError(t, err)
	inputs, err := tsClusterInputs(string(raw))
	require.NoError(t, err, "example/index.ts")
	out["example/index.ts"] = inputs
	block := regexp.MustCompile("(?s)```(ts|yaml)\n(.*?)```")
	for _, doc := range []string{"../README.md", "README.md"} {
		raw, err := os.ReadFile(doc)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		for i, m := range block.FindAllStringSubmatch(string(raw), -1) {
			where := fmt.Sprintf("%s, %s block %d", doc, m[1], i+1)
			switch {
			case m[1] == "ts" && strings.Contains(m[2], "new nodeless.Cluster("):
				inputs, err := tsClusterInputs(m[2])
				require.NoError(t, err, where)
				out[where] = inputs
			case m[1] == "yaml" && strings.Contains(m[2], "type: nodeless-eks:Cluster"):
				var program struct {
					Resources map[string]struct {
						Type       string
						Properties map[string]any
					}
				}
				require.NoError(t, yaml.Unmarshal([]byte(m[2]), &program), where)
				for name, r := range program.Resources {
					if r.Type == "nodeless-eks:Cluster" {
						out[where+" "+name] = r.Properties
					}
				}
			}
		}
	}
	return out
}

// tsClusterInputs reads the object literal a TypeScript program passes
// to new nodeless.Cluster(name, {...}) as JSON: keys quoted, comments and
// trailing commas dropped. The examples hold plain values only, as the
// schema asks.
func tsClusterInputs(src string) (map[string]any, error) {
	i := strings.Index(src, "new nodeless.Cluster(")
	if i < 0 {
		return nil, fmt.Errorf("no new nodeless.Cluster(")
	}
	start := i + strings.Index(src[i:], "{")
	depth, end := 0, -1
	for j := start; j < len(src) && end < 0; j++ {
		switch src[j] {
		case '{':
			depth++
		case '}':
			if depth--; depth == 0 {
				end = j + 1
			}
		}
	}
	if end < 0 {
		return nil, fmt.Errorf("the inputs' object literal does not close")
	}
	lit := regexp.MustCompile(`(?m)^\s*//.*$`).ReplaceAllString(src[start:end], "")
	lit = regexp.MustCompile(`([{,]\s*)([A-Za-z_][A-Za-z0-9_]*)\s*:`).ReplaceAllString(lit, `$1"$2":`)
	lit = regexp.MustCompile(`,(\s*[}\]])`).ReplaceAllString(lit, `$1`)
	var inputs map[string]any
	if err := json.Unmarshal([]byte(lit), &inputs); err != nil {
		return nil, fmt.Errorf("reading %s as JSON: %w", lit, err)
	}
	return inputs, nil
}

// TestExamplesPassTheClustersOwnChecks constructs every Cluster the
// documents and examples show, under the mock engine, with its inputs:
// what they show is what Construct accepts, by the program's own checks
// (config.FromInputs), not a copy of them. The same example with a
// documentation range as publicAccessCidrs is refused, as users would be.
func TestExamplesPassTheClustersOwnChecks(t *testing.T) {
	examples := clusterExamples(t)
	require.Contains(t, examples, "example/index.ts")
	region := map[pconfig.Key]string{pconfig.MustMakeKey("aws", "region"): "eu-west-1"}
	for where, inputs := range examples {
		t.Run(where, func(t *testing.T) {
			name, _ := inputs["clusterName"].(string)
			_, _, err := construct(t, map[string]string{testProject + ":clusterName": name}, resource.NewPropertyMapFromMap(inputs), region)
			require.NoError(t, err)
		})
	}
	t.Run("a documentation range is refused", func(t *testing.T) {
		inputs := map[string]any{}
		for k, v := range examples["example/index.ts"] {
			inputs[k] = v
		}
		inputs["publicAccessCidrs"] = []any{"203.0.113.0/24"}
		_, _, err := construct(t, map[string]string{testProject + ":clusterName": "platform"}, resource.NewPropertyMapFromMap(inputs), region)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `publicAccessCidrs[0] "203.0.113.0/24": 203.0.113.0/24 is a documentation range`)
	})
}
