package suite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/goldset/goldset/internal/dtype"
)

// Size limits keep a typo in a recipe from asking for terabytes.
const (
	maxDim       = 1 << 24
	maxElems     = 1 << 34 // elements of one tensor
	maxHeadDim   = 1024
	maxBatch     = 1 << 16
	maxContext   = 1 << 20
	maxBlockSize = 1 << 12
	// maxHeld caps tensors held whole in memory (elements).
	maxHeld = 1 << 28
)

// checkHeld rejects a tensor held whole in memory that would be too large.
func checkHeld(name string, dims ...int) error {
	n, err := checkElems(name, dims...)
	if err != nil {
		return err
	}
	if n > maxHeld {
		return errParams("%s would hold %d elements in memory (limit %d)", name, n, int64(maxHeld))
	}
	return nil
}

// decodeParams decodes raw strictly into p (unknown fields are errors).
func decodeParams(raw json.RawMessage, p any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p); err != nil {
		return fmt.Errorf("%w: %v", ErrParams, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data", ErrParams)
	}
	return nil
}

func errParams(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrParams, fmt.Sprintf(format, a...))
}

func checkRange(name string, v, lo, hi int) error {
	if v < lo || v > hi {
		return errParams("%s = %d, want %d..%d", name, v, lo, hi)
	}
	return nil
}

// inputDTypes are the storage types of the current ops' floating inputs
// and outputs (floatTensor holds fp16/bf16 bits or float32 values).
var inputDTypes = []dtype.DType{dtype.Float16, dtype.BFloat16, dtype.Float32}

func checkFloatDType(name, d string) error {
	if dt, err := dtype.Parse(d); err == nil && slices.Contains(inputDTypes, dt) {
		return nil
	}
	return errParams("%s %q: want float16, bfloat16 or float32", name, d)
}

// dtypeOf returns the table row of a dtype name the plan validated (a name
// that is not in the table is a programming error).
func dtypeOf(name string) dtype.DType {
	dt, ok := dtypeByName[name]
	if !ok {
		_, err := dtype.Parse(name)
		panic("suite: " + err.Error())
	}
	return dt
}

// dtypeByName indexes the dtype table by name: dtypeOf runs per element in
// places (floatTensor.set), where dtype.Parse's scan would show.
var dtypeByName = func() map[string]dtype.DType {
	m := make(map[string]dtype.DType)
	for _, d := range dtype.All() {
		m[d.Name()] = d
	}
	return m
}()

// dtypeSize returns the bytes per element of a validated dtype.
func dtypeSize(d string) int64 { return int64(dtypeOf(d).ItemSize()) }

func checkElems(name string, dims ...int) (int64, error) {
	n := int64(1)
	for _, d := range dims {
		if d < 0 {
			return 0, errParams("%s has a negative dimension", name)
		}
		n *= int64(d)
		if n > maxElems {
			return 0, errParams("%s has more than %d elements", name, int64(maxElems))
		}
	}
	return n, nil
}

func finitePositive(name string, v float64) error {
	if !(v > 0) || math.IsInf(v, 0) {
		return errParams("%s = %v, want a finite positive number", name, v)
	}
	return nil
}

// canonical re-encodes p (defaults filled in) for the manifest.
func canonical(p any) json.RawMessage {
	b, err := json.Marshal(p)
	if err != nil {
		panic("suite: params not marshalable: " + err.Error())
	}
	return b
}
