// Command crd-oracle answers, for one request per input line, the field errors kube-apiserver
// finds, one JSON answer per line: {"errors":[{"type","field","detail","error"}]} or
// {"refused": "<why the input is not a request>"}. A request is either
//   - a CustomResourceDefinition (apiextensions.k8s.io/v1, JSON): the errors of
//     apiextensions-apiserver's ValidateCustomResourceDefinition, run as the CRD registry does
//     on create (the v1 defaults applied, the CRD converted to the internal version); or
//   - {"crd": <CRD>, "object": <custom resource>, "old": <custom resource>}: the errors of the
//     CEL rules of the CRD's first version's schema on that object, as the custom resource
//     registry runs them on create, or on update from "old" when it is given (a structural
//     schema, the resource root's validator, the runtime cost budget);
//   - {"costs": <CRD>}: for every rule of the CRD's first version's schema, what cel.Compile
//     estimates as kube-apiserver compiles it when the CRD is written: the rule's most cost, its
//     message expression's, and how many values of its node one request can hold
//     ({"rules":[{"path","rule","cost","message","cardinality","error"}]}).
//
// It is a test oracle of kcp-rs (kcp-sim's CRD validation, its CEL rules above all), built
// from the Go module proxy at the versions go.mod pins; kcp-rs ships none of it.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"sort"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

type fieldError struct {
	Type   string `json:"type"`
	Field  string `json:"field"`
	Detail string `json:"detail"`
	Error  string `json:"error"`
}

type answer struct {
	Errors  []fieldError `json:"errors"`
	Refused string       `json:"refused,omitempty"`
}

func main() {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(in.Bytes(), &probe); err == nil && probe["crd"] != nil {
			_ = out.Encode(evaluate(scheme, in.Bytes()))
			continue
		}
		if probe["costs"] != nil {
			_ = out.Encode(estimate(scheme, probe["costs"]))
			continue
		}
		_ = out.Encode(validate(scheme, in.Bytes()))
	}
}

type evaluation struct {
	CRD    apiextensionsv1.CustomResourceDefinition `json:"crd"`
	Object map[string]any                           `json:"object"`
	// Old is the stored object of an update; absent on a create.
	Old map[string]any `json:"old"`
}

func evaluate(scheme *runtime.Scheme, line []byte) answer {
	var request evaluation
	// As the API server decodes a custom resource: integers are int64, other numbers float64.
	if err := utiljson.Unmarshal(line, &request); err != nil {
		return answer{Errors: []fieldError{}, Refused: err.Error()}
	}
	versions := request.CRD.Spec.Versions
	if len(versions) == 0 || versions[0].Schema == nil || versions[0].Schema.OpenAPIV3Schema == nil {
		return answer{Errors: []fieldError{}, Refused: "the CRD's first version has no schema"}
	}
	var internal apiextensions.JSONSchemaProps
	if err := scheme.Convert(versions[0].Schema.OpenAPIV3Schema, &internal, nil); err != nil {
		return answer{Errors: []fieldError{}, Refused: err.Error()}
	}
	structural, err := structuralschema.NewStructural(&internal)
	if err != nil {
		return answer{Errors: []fieldError{}, Refused: err.Error()}
	}
	validator := cel.NewValidator(structural, true, celconfig.PerCallLimit)
	if validator == nil {
		return answer{Errors: []fieldError{}}
	}
	var old any
	if request.Old != nil {
		old = request.Old
	}
	errs, _ := validator.Validate(context.Background(), nil, structural, request.Object, old, celconfig.RuntimeCELCostBudget)
	return answer{Errors: found(errs)}
}

func found(errs field.ErrorList) []fieldError {
	out := make([]fieldError, 0, len(errs))
	for _, e := range errs {
		out = append(out, fieldError{Type: string(e.Type), Field: e.Field, Detail: e.Detail, Error: e.Error()})
	}
	return out
}

func validate(scheme *runtime.Scheme, line []byte) answer {
	var external apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal(line, &external); err != nil {
		return answer{Errors: []fieldError{}, Refused: err.Error()}
	}
	scheme.Default(&external)
	var internal apiextensions.CustomResourceDefinition
	if err := scheme.Convert(&external, &internal, nil); err != nil {
		return answer{Errors: []fieldError{}, Refused: err.Error()}
	}
	errs := validation.ValidateCustomResourceDefinition(context.Background(), &internal)
	return answer{Errors: found(errs)}
}

type ruleCost struct {
	Path        string `json:"path"`
	Rule        int    `json:"rule"`
	Cost        uint64 `json:"cost"`
	Message     uint64 `json:"message"`
	Cardinality uint64 `json:"cardinality"`
	Error       string `json:"error,omitempty"`
}

type costAnswer struct {
	Rules   []ruleCost `json:"rules"`
	Refused string     `json:"refused,omitempty"`
}

func estimate(scheme *runtime.Scheme, raw []byte) costAnswer {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal(raw, &crd); err != nil {
		return costAnswer{Rules: []ruleCost{}, Refused: err.Error()}
	}
	versions := crd.Spec.Versions
	if len(versions) == 0 || versions[0].Schema == nil || versions[0].Schema.OpenAPIV3Schema == nil {
		return costAnswer{Rules: []ruleCost{}, Refused: "the CRD's first version has no schema"}
	}
	var internal apiextensions.JSONSchemaProps
	if err := scheme.Convert(versions[0].Schema.OpenAPIV3Schema, &internal, nil); err != nil {
		return costAnswer{Rules: []ruleCost{}, Refused: err.Error()}
	}
	structural, err := structuralschema.NewStructural(&internal)
	if err != nil {
		return costAnswer{Rules: []ruleCost{}, Refused: err.Error()}
	}
	envSet := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion(), true)
	rules := []ruleCost{}
	walkCosts(structural, "openAPIV3Schema", true, envSet, &rules)
	return costAnswer{Rules: rules}
}

// walkCosts compiles the rules of s and of every node below it, as the CRD's validation does.
func walkCosts(s *structuralschema.Structural, path string, root bool, envSet *environment.EnvSet, out *[]ruleCost) {
	if s == nil {
		return
	}
	if len(s.XValidations) > 0 {
		declType := model.SchemaDeclType(s, root || s.XEmbeddedResource)
		results, err := cel.Compile(s, declType, celconfig.PerCallLimit, envSet, cel.NewExpressionsEnvLoader())
		if err != nil {
			*out = append(*out, ruleCost{Path: path, Rule: -1, Error: err.Error()})
		}
		for i, r := range results {
			c := ruleCost{Path: path, Rule: i, Cost: r.MaxCost, Message: r.MessageExpressionMaxCost, Cardinality: r.MaxCardinality}
			if r.Error != nil {
				c.Error = r.Error.Detail
			}
			*out = append(*out, c)
		}
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		property := s.Properties[name]
		walkCosts(&property, path+".properties["+name+"]", false, envSet, out)
	}
	walkCosts(s.Items, path+".items", false, envSet, out)
	if s.AdditionalProperties != nil {
		walkCosts(s.AdditionalProperties.Structural, path+".additionalProperties", false, envSet, out)
	}
}
