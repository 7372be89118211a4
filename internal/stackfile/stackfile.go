// Package stackfile reads a Pulumi stack file the way the Pulumi CLI does
// before it runs a program: the tests of the three projects run their
// programs with exactly the configuration `pulumi up` would give them, and
// deploy/ refuses, at preview, a root stack file the CLI would refuse. It mirrors
// mergeConfig in pulumi/pulumi pkg/workspace/config.go (the CLI's
// ValidateStackConfigAndApplyProjectConfig), which lives in the CLI's own
// module, too heavy to import for one function.
package stackfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"gopkg.in/yaml.v3"
)

// Load reads the project file and a stack file and returns the
// configuration the CLI would hand the program: keys as in a stack file
// ("<namespace>:<key>"), objects and arrays as JSON (the shape of
// PULUMI_CONFIG). It reports every rule the stack breaks at once:
//
//   - a key that Pulumi.yaml declares without a default or value, in the
//     project's namespace, and the stack does not set is required: "Stack
//     '<stack>' is missing configuration value '<key>'";
//   - a value must have its declared type ("must be of type ...");
//   - a key in the project's namespace that Pulumi.yaml does not declare is
//     refused, as earlier CLIs refused it ("uses configuration value ...
//     which is not defined by the project configuration"): a typo in a key
//     would otherwise mean "use the default";
//   - declared defaults fill the keys the stack does not set.
func Load(projectFile, stackFile string) (map[string]string, error) {
	proj, err := workspace.LoadProject(projectFile)
	if err != nil {
		return nil, fmt.Errorf("%s must pass Pulumi's project schema: %w", projectFile, err)
	}
	raw, err := os.ReadFile(stackFile)
	if err != nil {
		return nil, err
	}
	var stack struct {
		Config map[string]any `yaml:"config"`
	}
	if err := yaml.Unmarshal(raw, &stack); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", stackFile, err)
	}
	stackName := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(stackFile), "Pulumi."), ".yaml")
	prefix := string(proj.Name) + ":"

	var errs []error
	values := map[string]any{}
	for _, key := range slices.Sorted(maps.Keys(stack.Config)) {
		value := stack.Config[key]
		values[key] = value
		name, inProject := strings.CutPrefix(key, prefix)
		if !inProject {
			continue
		}
		decl, declared := proj.Config[name]
		switch {
		case !declared:
			errs = append(errs, fmt.Errorf("Stack '%s' uses configuration value '%s' which is not defined by the project configuration (%s)",
				stackName, key, projectFile))
		case decl.IsExplicitlyTyped() && !workspace.ValidateConfigValue(*decl.Type, decl.Items, value):
			errs = append(errs, fmt.Errorf("Stack '%s' with configuration key '%s' must be of type '%s'",
				stackName, name, workspace.InferFullTypeName(*decl.Type, decl.Items)))
		}
	}
	var missing []string
	for _, name := range slices.Sorted(maps.Keys(proj.Config)) {
		decl := proj.Config[name]
		key := name
		if !strings.Contains(name, ":") {
			key = prefix + name
		}
		if _, set := values[key]; set {
			continue
		}
		switch {
		case decl.Default != nil:
			values[key] = decl.Default
		case decl.Value != nil:
			values[key] = decl.Value
		case strings.HasPrefix(key, prefix):
			missing = append(missing, "'"+name+"'")
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("Stack '%s' is missing configuration value(s) %s", stackName, strings.Join(missing, ", ")))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return Encode(values)
}

// Encode renders configuration values as the engine passes them to a
// program: strings as they are, everything else as JSON.
func Encode(values map[string]any) (map[string]string, error) {
	out := make(map[string]string, len(values))
	for k, v := range values {
		if s, ok := v.(string); ok {
			out[k] = s
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", k, err)
		}
		out[k] = string(b)
	}
	return out, nil
}
