// Command crd-oracle answers, for one request per input line, the field errors kube-apiserver
// finds, one JSON answer per line: {"errors":[{"type","field","detail","error"}]} or
// {"refused": "<why the input is not a request>"}. A request is either
//   - a CustomResourceDefinition (apiextensions.k8s.io/v1, JSON): the errors of
//     apiextensions-apiserver's ValidateCustomResourceDefinition, run as the CRD registry does
//     on create (the v1 defaults applied, the CRD converted to the internal version); or
//   - {"crd": <CRD>, "object": <custom resource>}: the errors of the CEL rules of the CRD's
//     first version's schema on that object, as the custom resource registry runs them on
//     create (a structural schema, the resource root's validator, the runtime cost budget).
//
// It is a test oracle of kcp-rs (kcp-sim's CRD validation, its CEL rules above all), built
// from the Go module proxy at the versions go.mod pins; kcp-rs ships none of it.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
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
		_ = out.Encode(validate(scheme, in.Bytes()))
	}
}

type evaluation struct {
	CRD    apiextensionsv1.CustomResourceDefinition `json:"crd"`
	Object map[string]any                           `json:"object"`
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
	errs, _ := validator.Validate(context.Background(), nil, structural, request.Object, nil, celconfig.RuntimeCELCostBudget)
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
