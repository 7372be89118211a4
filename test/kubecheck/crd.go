package kubecheck

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	karpenterapis "github.com/aws/karpenter-provider-aws/pkg/apis"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

// Validator checks custom resources against their CRDs the way the API
// server does on create: prune unknown fields, apply defaults, then run the
// OpenAPI schema and the CEL x-kubernetes-validations rules.
type Validator struct {
	kinds map[string]*servedVersion // "group/version, Kind=kind"
}

// servedVersion is one served version of a CRD, ready to validate.
type servedVersion struct {
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// Result is what the API server would do with an object.
type Result struct {
	// Object is the object after pruning and defaulting, as it would be
	// stored.
	Object map[string]any
	// Pruned lists the fields the API server would silently drop.
	Pruned []string
	// Errors are the validation failures; the API server would reject the
	// object if there is any.
	Errors field.ErrorList
}

// Valid reports whether the object would be stored exactly as sent.
func (r Result) Valid() bool { return len(r.Errors) == 0 && len(r.Pruned) == 0 }

// Problems describes every pruned field and error, one per line.
func (r Result) Problems() string {
	var lines []string
	for _, p := range r.Pruned {
		lines = append(lines, "pruned unknown field "+p)
	}
	for _, e := range r.Errors {
		lines = append(lines, e.Error())
	}
	return strings.Join(lines, "\n")
}

// NewKarpenterValidator builds a validator from the CRDs embedded in the
// karpenter-provider-aws module of the build (pkg/apis): EC2NodeClass,
// NodePool, NodeClaim and NodeOverlay.
func NewKarpenterValidator() (*Validator, error) {
	return NewValidator(karpenterapis.CRDs...)
}

// NewKarpenterValidatorFrom builds a validator from the CRD files of a
// karpenter-provider-aws module directory (pkg/apis/crds), the ones its
// pkg/apis embeds.
func NewKarpenterValidatorFrom(moduleDir string) (*Validator, error) {
	files, err := filepath.Glob(filepath.Join(moduleDir, "pkg", "apis", "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no CRDs in %s/pkg/apis/crds: %v", moduleDir, err)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			return nil, fmt.Errorf("reading %s: %w", f, err)
		}
		crds = append(crds, crd)
	}
	return NewValidator(crds...)
}

// NewValidator builds a validator for the served versions of crds.
func NewValidator(crds ...*apiextensionsv1.CustomResourceDefinition) (*Validator, error) {
	v := &Validator{kinds: map[string]*servedVersion{}}
	for _, crdV1 := range crds {
		crd := &apiextensions.CustomResourceDefinition{}
		if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crdV1, crd, nil); err != nil {
			return nil, fmt.Errorf("converting CRD %s: %w", crdV1.Name, err)
		}
		for _, ver := range crd.Spec.Versions {
			if !ver.Served {
				continue
			}
			props := crd.Spec.Validation
			if ver.Schema != nil {
				props = ver.Schema
			}
			if props == nil || props.OpenAPIV3Schema == nil {
				return nil, fmt.Errorf("CRD %s version %s has no schema", crd.Name, ver.Name)
			}
			structural, err := structuralschema.NewStructural(props.OpenAPIV3Schema)
			if err != nil {
				return nil, fmt.Errorf("CRD %s version %s: building structural schema: %w", crd.Name, ver.Name, err)
			}
			if errs := structuralschema.ValidateStructural(field.NewPath("openAPIV3Schema"), structural); len(errs) > 0 {
				return nil, fmt.Errorf("CRD %s version %s: schema is not structural: %w", crd.Name, ver.Name, errs.ToAggregate())
			}
			schemaValidator, _, err := apiservervalidation.NewSchemaValidator(props.OpenAPIV3Schema)
			if err != nil {
				return nil, fmt.Errorf("CRD %s version %s: building schema validator: %w", crd.Name, ver.Name, err)
			}
			key := fmt.Sprintf("%s/%s, Kind=%s", crd.Spec.Group, ver.Name, crd.Spec.Names.Kind)
			v.kinds[key] = &servedVersion{
				structural: structural,
				schema:     schemaValidator,
				cel:        cel.NewValidator(structural, true, celconfig.PerCallLimit),
			}
		}
	}
	return v, nil
}

// Kinds lists the group/version/kinds the validator knows.
func (v *Validator) Kinds() []string {
	out := make([]string, 0, len(v.kinds))
	for k := range v.kinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Validate runs obj (apiVersion, kind, metadata, spec) through pruning,
// defaulting and validation. obj is not modified.
func (v *Validator) Validate(obj map[string]any) (Result, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	key := fmt.Sprintf("%s, Kind=%s", apiVersion, kind)
	sv, ok := v.kinds[key]
	if !ok {
		return Result{}, fmt.Errorf("no served CRD version for %s; known: %v", key, v.Kinds())
	}
	// Decode as the API server does: from JSON, whole numbers as int64.
	raw, err := json.Marshal(obj)
	if err != nil {
		return Result{}, fmt.Errorf("encoding %s: %w", key, err)
	}
	var work map[string]any
	if err := utiljson.Unmarshal(raw, &work); err != nil {
		return Result{}, fmt.Errorf("decoding %s: %w", key, err)
	}

	var res Result
	metadata, _ := work["metadata"].(map[string]any)
	name, _ := metadata["name"].(string)
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		res.Errors = append(res.Errors, field.Invalid(field.NewPath("metadata", "name"), name, msg))
	}

	res.Pruned = structuralpruning.PruneWithOptions(work, sv.structural, true, structuralschema.UnknownFieldPathOptions{
		TrackUnknownFieldPaths: true,
	})
	sort.Strings(res.Pruned)
	structuraldefaulting.Default(work, sv.structural)

	res.Errors = append(res.Errors, apiservervalidation.ValidateCustomResource(nil, work, sv.schema)...)
	if sv.cel != nil {
		celErrs, _ := sv.cel.Validate(context.Background(), nil, sv.structural, work, nil, celconfig.RuntimeCELCostBudget)
		res.Errors = append(res.Errors, celErrs...)
	}
	res.Object = work
	return res, nil
}
