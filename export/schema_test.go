package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
)

// validate checks v (decoded JSON) against the subset of JSON Schema that
// testdata/msopst_case.schema.json uses: type (object, array, string,
// integer, number), required, properties, additionalProperties false,
// items, minItems, maxItems, minLength, minimum, enum.
func validate(s map[string]any, v any, at string) error {
	if e, ok := s["enum"].([]any); ok && !slices.Contains(e, v) {
		return fmt.Errorf("%s: %v not in %v", at, v, e)
	}
	switch s["type"] {
	case "object":
		o, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: not an object", at)
		}
		props, _ := s["properties"].(map[string]any)
		for _, r := range asSlice(s["required"]) {
			if _, ok := o[r.(string)]; !ok {
				return fmt.Errorf("%s: %q required", at, r)
			}
		}
		for k, x := range o {
			ps, ok := props[k].(map[string]any)
			if !ok {
				if s["additionalProperties"] == false {
					return fmt.Errorf("%s: %q not allowed", at, k)
				}
				continue
			}
			if err := validate(ps, x, at+"."+k); err != nil {
				return err
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: not an array", at)
		}
		if n, ok := s["minItems"].(float64); ok && float64(len(a)) < n {
			return fmt.Errorf("%s: %d items, at least %v", at, len(a), n)
		}
		if n, ok := s["maxItems"].(float64); ok && float64(len(a)) > n {
			return fmt.Errorf("%s: %d items, at most %v", at, len(a), n)
		}
		if is, ok := s["items"].(map[string]any); ok {
			for i, x := range a {
				if err := validate(is, x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: not a string", at)
		}
		if n, ok := s["minLength"].(float64); ok && float64(len(str)) < n {
			return fmt.Errorf("%s: shorter than %v", at, n)
		}
	case "integer", "number":
		x, ok := v.(float64)
		if !ok || s["type"] == "integer" && x != math.Trunc(x) {
			return fmt.Errorf("%s: %v is not an %s", at, v, s["type"])
		}
		if m, ok := s["minimum"].(float64); ok && x < m {
			return fmt.Errorf("%s: %v below %v", at, x, m)
		}
	}
	return nil
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

func decodeJSON(b []byte) (any, error) {
	var v any
	err := json.Unmarshal(b, &v)
	return v, err
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// jsonDecoderKeys returns the keys of the object under key in raw, in
// their order in the file.
func jsonDecoderKeys(t interface{ Fatal(...any) }, raw []byte, key string) []string {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(top[key]))
	var keys []string
	dec.Token() // {
	for dec.More() {
		k, _ := dec.Token()
		keys = append(keys, k.(string))
		var skip json.RawMessage
		dec.Decode(&skip)
	}
	return keys
}
