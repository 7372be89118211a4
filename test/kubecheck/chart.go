package kubecheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Rendered is a chart rendered with a set of values.
type Rendered struct {
	// Chart is the rendered chart's metadata (name, version).
	Chart *chart.Metadata
	// Objects are the manifests, in the order Helm printed them.
	Objects []*unstructured.Unstructured
}

// Find returns the object of kind and name, or nil.
func (r *Rendered) Find(kind, name string) *unstructured.Unstructured {
	for _, o := range r.Objects {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// RenderChart renders the chart in chartDir as `helm install --dry-run`
// without a cluster would (action.Install with DryRun and ClientOnly),
// for a cluster of kubeVersion ("1.34").
func RenderChart(chartDir, releaseName, namespace, kubeVersion string, values map[string]any) (*Rendered, error) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", chartDir, err)
	}
	kv, err := chartutil.ParseKubeVersion("v" + kubeVersion + ".0")
	if err != nil {
		return nil, fmt.Errorf("parsing Kubernetes version %q: %w", kubeVersion, err)
	}
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.DryRun = true
	install.ClientOnly = true
	install.Replace = true
	install.IncludeCRDs = false
	install.ReleaseName = releaseName
	install.Namespace = namespace
	install.KubeVersion = kv
	rel, err := install.Run(chrt, values)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s %s: %w", chrt.Metadata.Name, chrt.Metadata.Version, err)
	}
	objects, err := DecodeManifests(rel.Manifest)
	if err != nil {
		return nil, err
	}
	return &Rendered{Chart: chrt.Metadata, Objects: objects}, nil
}

// DecodeManifests splits a multi-document YAML stream into objects,
// leaving out empty documents.
func DecodeManifests(manifest string) ([]*unstructured.Unstructured, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewBufferString(manifest)))
	var out []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading rendered manifest: %w", err)
		}
		obj := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(doc, &obj.Object); err != nil {
			return nil, fmt.Errorf("decoding rendered manifest: %w", err)
		}
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
	}
}

// UnknownValues lists the paths in values that the chart's default values
// do not have: a misspelt key renders nothing and fails silently. Keys below
// a default that is an empty map (annotations, labels) are free-form.
func UnknownValues(chrt map[string]any, values map[string]any) []string {
	var out []string
	var walk func(prefix string, defaults, got map[string]any)
	walk = func(prefix string, defaults, got map[string]any) {
		for k, v := range got {
			path := prefix + k
			d, ok := defaults[k]
			if !ok {
				out = append(out, path)
				continue
			}
			dm, dIsMap := d.(map[string]any)
			vm, vIsMap := v.(map[string]any)
			if dIsMap && vIsMap && len(dm) > 0 {
				walk(path+".", dm, vm)
			}
		}
	}
	walk("", chrt, values)
	return out
}

// ChartDefaults loads a chart's default values.
func ChartDefaults(chartDir string) (map[string]any, error) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", chartDir, err)
	}
	return chrt.Values, nil
}
