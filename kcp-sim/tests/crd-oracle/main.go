// Command crd-oracle answers, for one CustomResourceDefinition (apiextensions.k8s.io/v1, JSON)
// per input line, the field errors kube-apiserver's validation of that CRD finds: the v1
// defaults applied, the object converted to the internal version, and
// apiextensions-apiserver's ValidateCustomResourceDefinition run on it, as the CRD registry
// does on create. One JSON answer per line: {"errors":[{"type","field","detail","error"}]} or
// {"refused": "<why the input is not a CRD>"}.
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
	"k8s.io/apimachinery/pkg/runtime"
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
		_ = out.Encode(validate(scheme, in.Bytes()))
	}
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
	found := make([]fieldError, 0, len(errs))
	for _, e := range errs {
		found = append(found, fieldError{Type: string(e.Type), Field: e.Field, Detail: e.Detail, Error: e.Error()})
	}
	return answer{Errors: found}
}
