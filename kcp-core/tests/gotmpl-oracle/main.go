// Command gotmpl-oracle renders Go templates the way the upstream kcp tools do, so that
// kcp-core's template engine can be compared with Go itself (see ../go_differential.rs).
//
// It reads one JSON request per line on stdin and writes one JSON answer per line on stdout:
//
//	request: {"template": "...", "data": {...}, "yaml": false, "html": false}
//	answer:  {"output": "..."} or {"error": "..."}; with "yaml": true also {"json": "..."}
//	request: {"list_functions": true}
//	answer:  {"functions": ["abbrev", ...]} (the names in sprig.TxtFuncMap())
//	request: {"gjson_path": "...", "document": "..."}
//	answer:  {"exists": true, "raw": "...", "output": "..."} (gjson.Get: Exists, Raw, String())
//	request: {"label_selector": "a in (b"}
//	answer:  {"error": "..."} or {"output": "..."}: labels.Parse of k8s.io/apimachinery (the
//	         version kube-apiserver v1.34.2 builds with), its error or the selector's String();
//	         with "labels": {...} also {"exists": true} when the selector matches those labels
//	request: {"field_selector": "metadata.name=a"}
//	answer:  {"error": "..."} or {"output": "..."}: fields.ParseSelector, its error or String()
//	request: {"decode_hex": "7b6e..."}
//	answer:  {"error": "...", "syntax": true} or {}: the bytes decoded by encoding/json into the
//	         struct of apiVersion and kind kube-apiserver reads first, and into the struct of a
//	         list's continue token, as kube-apiserver decodes them ("error" is the first error,
//	         "syntax" whether it is a *json.SyntaxError, "token_error" the continue token's); and
//	         by base64.RawURLEncoding ("base64_error").
//
// gjson is github.com/tidwall/gjson v1.18.0, the version upstream api-syncagent pins for its
// mutation paths and related-object references.
//
// Templates run on text/template with sprig.TxtFuncMap() plus the functions api-syncagent adds
// (sha3sum, sha3short, shortHash) and helm-style toYaml; with "html", on html/template (as the
// upstream init-agent renders). Numbers in the data are decoded as
// Kubernetes' unstructured decoder does: int64 when integral, float64 otherwise. With "yaml",
// the rendered text is also converted YAML-to-JSON with ghodss/yaml (YAML 1.1 scalars, as
// sigs.k8s.io/yaml reads manifests) and the compact JSON is returned.
//
// The template is named "template", as in the upstream init-agent and in kcp-core.
//
// A Go module of its own: sprig v3.3.0 (the version the upstream init-agent pins), ghodss/yaml,
// x/crypto and k8s.io/apimachinery v0.34.2 come from the Go module proxy at the versions go.mod
// and go.sum pin:
//
//	go build -o gotmpl-oracle .
package main

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"os"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"github.com/ghodss/yaml"
	"github.com/tidwall/gjson"
	"golang.org/x/crypto/sha3"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"kcp-rs.dev/gotmpl-oracle/storage"
)

type request struct {
	Template      string          `json:"template"`
	Data          json.RawMessage `json:"data"`
	YAML          bool            `json:"yaml"`
	HTML          bool            `json:"html"`
	ListFunctions bool            `json:"list_functions"`
	GjsonPath     *string         `json:"gjson_path"`
	Document      string          `json:"document"`
	DecodeHex     *string         `json:"decode_hex"`
	LabelSelector *string         `json:"label_selector"`
	FieldSelector *string         `json:"field_selector"`
	Labels        labels.Set      `json:"labels"`
}

type answer struct {
	Output    *string  `json:"output,omitempty"`
	Error     *string  `json:"error,omitempty"`
	JSON      *string  `json:"json,omitempty"`
	Functions []string `json:"functions,omitempty"`
	Exists    *bool    `json:"exists,omitempty"`
	Raw       *string  `json:"raw,omitempty"`
	Syntax    bool     `json:"syntax,omitempty"`
	Token     *string  `json:"token_error,omitempty"`
	Base64    *string  `json:"base64_error,omitempty"`
}

// errorText is err's text, or nil.
func errorText(err error) *string {
	if err == nil {
		return nil
	}
	text := err.Error()
	return &text
}

// labelSelector answers how kube-apiserver reads a list's labelSelector.
func labelSelector(input string, set labels.Set) answer {
	selector, err := labels.Parse(input)
	if err != nil {
		return answer{Error: errorText(err)}
	}
	text := selector.String()
	matches := selector.Matches(set)
	return answer{Output: &text, Exists: &matches}
}

// fieldSelector answers how kube-apiserver reads a list's fieldSelector.
func fieldSelector(input string) answer {
	selector, err := fields.ParseSelector(input)
	if err != nil {
		return answer{Error: errorText(err)}
	}
	text := selector.String()
	return answer{Output: &text}
}

// decodings answers how Go's decoders read the bytes hex-encoded in input.
func decodings(input string) answer {
	data, err := hex.DecodeString(input)
	if err != nil {
		return answer{Error: errorText(err)}
	}
	probe := struct {
		APIVersion string `json:"apiVersion,omitempty"`
		Kind       string `json:"kind,omitempty"`
	}{}
	var a answer
	err = json.Unmarshal(data, &probe)
	a.Error = errorText(err)
	var syntax *json.SyntaxError
	a.Syntax = errors.As(err, &syntax)
	a.Token = errorText(storage.DecodeToken(data))
	_, err = base64.RawURLEncoding.DecodeString(string(data))
	a.Base64 = errorText(err)
	return a
}

// gjsonGet answers a gjson request as api-syncagent reads a path.
func gjsonGet(path, document string) answer {
	result := gjson.Get(document, path)
	exists := result.Exists()
	raw := result.Raw
	text := result.String()
	return answer{Exists: &exists, Raw: &raw, Output: &text}
}

func sha3sum(input string) string {
	sum := sha3.Sum256([]byte(input))
	return hex.EncodeToString(sum[:])
}

func sha3short(input string, lengths ...int) (string, error) {
	length := 20
	switch len(lengths) {
	case 0:
	case 1:
		length = lengths[0]
	default:
		return "", fmt.Errorf("sha3short: expected at most one length argument, got %d", len(lengths))
	}
	if length <= 0 {
		return "", fmt.Errorf("sha3short: invalid length %d", length)
	}
	sum := sha3sum(input)
	if length > len(sum) {
		length = len(sum)
	}
	return sum[:length], nil
}

func shortHash(input string) string {
	sum := sha1.Sum([]byte(input))
	return hex.EncodeToString(sum[:])[:20]
}

func toYaml(v interface{}) string {
	out, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(out), "\n")
}

func funcs() template.FuncMap {
	m := sprig.TxtFuncMap()
	m["sha3sum"] = sha3sum
	m["sha3short"] = sha3short
	m["shortHash"] = shortHash
	m["toYaml"] = toYaml
	return m
}

// normalize turns json.Number into int64 or float64, recursively.
func normalize(v interface{}) interface{} {
	switch t := v.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	case map[string]interface{}:
		for k, e := range t {
			t[k] = normalize(e)
		}
		return t
	case []interface{}:
		for i, e := range t {
			t[i] = normalize(e)
		}
		return t
	default:
		return v
	}
}

func functionNames() answer {
	var names []string
	for name := range sprig.TxtFuncMap() {
		names = append(names, name)
	}
	sort.Strings(names)
	return answer{Functions: names}
}

func render(req request) (a answer) {
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprintf("panic: %v", r)
			a = answer{Error: &msg}
		}
	}()
	var data interface{}
	if len(req.Data) > 0 {
		dec := json.NewDecoder(bytes.NewReader(req.Data))
		dec.UseNumber()
		if err := dec.Decode(&data); err != nil {
			msg := "bad data: " + err.Error()
			return answer{Error: &msg}
		}
		data = normalize(data)
	}
	var buf bytes.Buffer
	if req.HTML {
		// The upstream init-agent: html/template with sprig's text function map.
		tmpl, err := htmltemplate.New("template").Funcs(htmltemplate.FuncMap(funcs())).Parse(req.Template)
		if err != nil {
			msg := err.Error()
			return answer{Error: &msg}
		}
		if err := tmpl.Execute(&buf, data); err != nil {
			msg := err.Error()
			return answer{Error: &msg}
		}
	} else {
		tmpl, err := template.New("template").Funcs(funcs()).Parse(req.Template)
		if err != nil {
			msg := err.Error()
			return answer{Error: &msg}
		}
		if err := tmpl.Execute(&buf, data); err != nil {
			msg := err.Error()
			return answer{Error: &msg}
		}
	}
	out := buf.String()
	a.Output = &out
	if req.YAML {
		j, err := yaml.YAMLToJSON(buf.Bytes())
		if err != nil {
			msg := "yaml: " + err.Error()
			a.Error = &msg
		} else {
			s := string(j)
			a.JSON = &s
		}
	}
	return a
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for in.Scan() {
		var req request
		var a answer
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			msg := "bad request: " + err.Error()
			a = answer{Error: &msg}
		} else if req.ListFunctions {
			a = functionNames()
		} else if req.FieldSelector != nil {
			a = fieldSelector(*req.FieldSelector)
		} else if req.LabelSelector != nil {
			a = labelSelector(*req.LabelSelector, req.Labels)
		} else if req.DecodeHex != nil {
			a = decodings(*req.DecodeHex)
		} else if req.GjsonPath != nil {
			a = gjsonGet(*req.GjsonPath, req.Document)
		} else {
			a = render(req)
		}
		if err := enc.Encode(a); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := out.Flush(); err != nil {
			os.Exit(1)
		}
	}
}
