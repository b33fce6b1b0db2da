package diff

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strconv"
)

// ErrJSON is returned (wrapped) when a params, info or tolerance value is not
// a single valid JSON value.
var ErrJSON = errors.New("invalid JSON value")

// Change is one field that differs between the old and the new bundle. Old
// and New are compact JSON; Old is absent when the field was added, New when
// it was removed.
type Change struct {
	Path string          `json:"path"`
	Old  json.RawMessage `json:"old,omitempty"`
	New  json.RawMessage `json:"new,omitempty"`
}

func (c Change) String() string {
	return c.Path + ": " + showJSON(c.Old) + " -> " + showJSON(c.New)
}

func showJSON(v json.RawMessage) string {
	if len(v) == 0 {
		return "(absent)"
	}
	return string(v)
}

// JSON returns the field-level differences between two JSON values, each
// change named by its key path below prefix: object members as
// prefix.key (or prefix["key"] when the key is not a plain identifier),
// array elements as prefix[i]. Objects are compared member by member, keys in
// sorted order; arrays of equal length element by element; arrays of
// different lengths and values of different JSON types are reported whole.
// Numbers are equal when their text is equal, when both are integer
// literals of the same value (compared exactly, so uint64 seeds are safe),
// or otherwise when they parse to the same finite float64 (1e2 equals 100). An empty old or new (a missing field) counts as {} when the other
// side is an object, otherwise as absent. It returns ErrJSON when either
// side is not exactly one valid JSON value.
func JSON(prefix string, old, new []byte) ([]Change, error) {
	ov, oOK, err := decodeJSON(old)
	if err != nil {
		return nil, fmt.Errorf("diff: old %s: %w", prefixName(prefix), err)
	}
	nv, nOK, err := decodeJSON(new)
	if err != nil {
		return nil, fmt.Errorf("diff: new %s: %w", prefixName(prefix), err)
	}
	switch {
	case !oOK && !nOK:
		return nil, nil
	case !oOK:
		if _, isObj := nv.(map[string]any); !isObj {
			return []Change{{Path: prefix, New: compact(nv)}}, nil
		}
		ov = map[string]any{}
	case !nOK:
		if _, isObj := ov.(map[string]any); !isObj {
			return []Change{{Path: prefix, Old: compact(ov)}}, nil
		}
		nv = map[string]any{}
	}
	var out []Change
	diffValue(&out, prefix, ov, nv)
	return out, nil
}

func prefixName(p string) string {
	if p == "" {
		return "value"
	}
	return p
}

// decodeJSON decodes one JSON value with numbers kept as text. ok is false
// for empty input.
func decodeJSON(b []byte) (v any, ok bool, err error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrJSON, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false, fmt.Errorf("%w: data after the value", ErrJSON)
	}
	return v, true, nil
}

func diffValue(out *[]Change, path string, o, n any) {
	switch ov := o.(type) {
	case map[string]any:
		nv, ok := n.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(ov)+len(nv))
		for k := range ov {
			keys = append(keys, k)
		}
		for k := range nv {
			if _, seen := ov[k]; !seen {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := memberPath(path, k)
			a, inOld := ov[k]
			b, inNew := nv[k]
			switch {
			case !inOld:
				*out = append(*out, Change{Path: p, New: compact(b)})
			case !inNew:
				*out = append(*out, Change{Path: p, Old: compact(a)})
			default:
				diffValue(out, p, a, b)
			}
		}
		return
	case []any:
		nv, ok := n.([]any)
		if !ok || len(nv) != len(ov) {
			break
		}
		for i := range ov {
			diffValue(out, path+"["+strconv.Itoa(i)+"]", ov[i], nv[i])
		}
		return
	}
	if !equalScalar(o, n) {
		*out = append(*out, Change{Path: path, Old: compact(o), New: compact(n)})
	}
}

// equalScalar compares values that are not both objects or both equal-length
// arrays; containers are never equal here.
func equalScalar(o, n any) bool {
	switch ov := o.(type) {
	case json.Number:
		nv, ok := n.(json.Number)
		if !ok {
			return false
		}
		if ov == nv {
			return true
		}
		// Integers (seeds, sizes) compare exactly, whatever their size.
		if x, ok := new(big.Int).SetString(string(ov), 10); ok {
			if y, ok := new(big.Int).SetString(string(nv), 10); ok {
				return x.Cmp(y) == 0
			}
		}
		a, errA := strconv.ParseFloat(string(ov), 64)
		b, errB := strconv.ParseFloat(string(nv), 64)
		return errA == nil && errB == nil && a == b
	case string:
		nv, ok := n.(string)
		return ok && ov == nv
	case bool:
		nv, ok := n.(bool)
		return ok && ov == nv
	case nil:
		return n == nil
	}
	return false
}

func memberPath(path, key string) string {
	if isIdent(key) {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	return path + "[" + string(compact(key)) + "]"
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		ok := r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9'
		if !ok {
			return false
		}
	}
	return true
}

// compact marshals a decoded value back to compact JSON without HTML
// escaping, so that strings read as they were written.
func compact(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Values come from the decoder, so they always re-encode.
		panic("diff: re-encoding a decoded JSON value failed")
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}
