package suite

import (
	"encoding/json"
	"fmt"

	"github.com/goldset/goldset/internal/dtype"
	"github.com/goldset/goldset/manifests"
)

// workIn is what an op's work formula (op.work) reads: the case's
// canonical params, its tensor entries and the counts its builder
// recorded with addFact (valid tokens, selected entries, routed experts:
// facts of the data, not of the params).
type workIn struct {
	params  json.RawMessage
	tensors []manifests.Tensor
	facts   map[string]int64
}

// addFact adds v to the build's count k; safe from any goroutine.
func (c *caseCtx) addFact(k string, v int64) {
	c.factMu.Lock()
	defer c.factMu.Unlock()
	if c.facts == nil {
		c.facts = make(map[string]int64)
	}
	c.facts[k] += v
}

// caseWork computes a built case's work with its op's formula.
func caseWork(opName string, params json.RawMessage, tensors []manifests.Tensor, facts map[string]int64) (*manifests.Work, error) {
	o, ok := opTable[opName]
	if !ok || o.work == nil {
		return nil, fmt.Errorf("work: op %s has no work formula", opName)
	}
	w, err := o.work(workIn{params: params, tensors: tensors, facts: facts})
	if err != nil {
		return nil, err
	}
	if w.BytesRead < 0 || w.BytesWritten < 0 || w.Flops < 0 || w.FlopDType == "" {
		return nil, fmt.Errorf("work: op %s: bad work %+v", opName, w)
	}
	return &w, nil
}

// tensor returns the entry of tensor name.
func (w workIn) tensor(name string) (*manifests.Tensor, error) {
	for i := range w.tensors {
		if w.tensors[i].Name == name {
			return &w.tensors[i], nil
		}
	}
	return nil, fmt.Errorf("work: no tensor %q", name)
}

// bytes returns the data bytes (the .npy payload, no header) of the named
// tensors, read or written whole.
func (w workIn) bytes(names ...string) (int64, error) {
	var sum int64
	for _, n := range names {
		t, err := w.tensor(n)
		if err != nil {
			return 0, err
		}
		b, err := dataBytes(t)
		if err != nil {
			return 0, err
		}
		sum += b
	}
	return sum, nil
}

// rowBytes returns the data bytes of one index of tensor name's leading
// axis (a row of a cache, an expert's weights).
func (w workIn) rowBytes(name string) (int64, error) {
	t, err := w.tensor(name)
	if err != nil {
		return 0, err
	}
	b, err := dataBytes(t)
	if err != nil || len(t.Shape) == 0 || t.Shape[0] == 0 {
		return 0, err
	}
	return b / t.Shape[0], nil
}

// fact returns the build's count k; a formula asking for a count its
// builder did not record is a programming error, reported as one.
func (w workIn) fact(k string) (int64, error) {
	v, ok := w.facts[k]
	if !ok {
		return 0, fmt.Errorf("work: the builder recorded no %q", k)
	}
	return v, nil
}

// dataBytes is the payload size of a tensor entry.
func dataBytes(t *manifests.Tensor) (int64, error) {
	d, err := dtype.Parse(t.DType)
	if err != nil {
		return 0, err
	}
	n := int64(1)
	for _, s := range t.Shape {
		n *= s
	}
	return d.StorageBytes(n * int64(d.ElemsPerItem()))
}

// sumErr adds values that may come with errors (the first error wins).
type sumErr struct {
	v   int64
	err error
}

func (s *sumErr) add(v int64, err error) {
	if s.err == nil {
		s.err = err
		s.v += v
	}
}

// wholeWork is the work of an op that reads its inputs whole and writes
// its outputs whole, with flops given.
func wholeWork(w workIn, in, out []string, flops int64, flopDType string) (manifests.Work, error) {
	r, err := w.bytes(in...)
	if err != nil {
		return manifests.Work{}, err
	}
	wr, err := w.bytes(out...)
	if err != nil {
		return manifests.Work{}, err
	}
	return manifests.Work{BytesRead: r, BytesWritten: wr, Flops: flops, FlopDType: flopDType}, nil
}

// decodeWork decodes a case's canonical params (already validated and
// filled in by the plan) for a work formula.
func decodeWork[P any](w workIn) (P, error) {
	var p P
	if err := json.Unmarshal(w.params, &p); err != nil {
		return p, fmt.Errorf("work: params: %w", err)
	}
	return p, nil
}

// countValid counts the non-negative entries of an index tensor (slots
// written, selected indices).
func countValid(v []int32) int {
	n := 0
	for _, x := range v {
		if x >= 0 {
			n++
		}
	}
	return n
}
