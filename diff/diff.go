package diff

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/goldset/goldset/internal/jsonnum"
	"github.com/goldset/goldset/manifests"
)

// DefaultRelFloor is the smallest denominator of a relative change:
// rel = |new - old| / max(|old|, RelFloor).
const DefaultRelFloor = 1e-6

// DefaultChunkElems is the number of elements read from each file at a time.
const DefaultChunkElems = 1 << 20

// Status of a case or tensor.
const (
	StatusUnchanged = "unchanged"
	StatusChanged   = "changed"
	StatusAdded     = "added"
	StatusRemoved   = "removed"
)

// Options tune Bundles. The zero value is ready to use.
type Options struct {
	// Jobs is the number of tensors compared in parallel (at least 1).
	// Results do not depend on it.
	Jobs int
	// ValuesLimit skips the value comparison of tensors whose .npy size,
	// old or new, exceeds this many bytes; 0 means no limit and a negative
	// value skips every value comparison (metadata is still compared).
	ValuesLimit int64
	// ChunkElems is the number of elements read from each file at a time;
	// 0 means DefaultChunkElems.
	ChunkElems int
	// RelFloor is the floor of the relative-change denominator; 0 means
	// DefaultRelFloor.
	RelFloor float64
}

// Report is the difference between two bundles. Only cases and tensors that
// are not unchanged are listed; Counts counts all of them.
type Report struct {
	Old string `json:"old"`
	New string `json:"new"`
	// Manifest lists changed manifest-level fields.
	Manifest []Change `json:"manifest"`
	Counts   Counts   `json:"counts"`
	// RelFloor is the floor used for every max_rel.
	RelFloor float64    `json:"rel_floor"`
	Cases    []CaseDiff `json:"cases"`
}

// Counts tallies cases and tensors by status. Tensors of added and removed
// cases count as added and removed tensors.
type Counts struct {
	Cases   Tally `json:"cases"`
	Tensors Tally `json:"tensors"`
}

// Tally counts items by status.
type Tally struct {
	Unchanged int `json:"unchanged"`
	Changed   int `json:"changed"`
	Added     int `json:"added"`
	Removed   int `json:"removed"`
}

func (t *Tally) add(status string) {
	switch status {
	case StatusUnchanged:
		t.Unchanged++
	case StatusChanged:
		t.Changed++
	case StatusAdded:
		t.Added++
	case StatusRemoved:
		t.Removed++
	}
}

// CaseDiff is one case that was added, removed or changed.
type CaseDiff struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	// Op is the case's op (the new one when both exist).
	Op string `json:"op"`
	// Changes lists op, split, params.* and info.* differences.
	Changes []Change     `json:"changes,omitempty"`
	Tensors []TensorDiff `json:"tensors,omitempty"`
}

// TensorDiff is one tensor that was added, removed or changed.
type TensorDiff struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	// Role, DType and Shape describe the tensor (the new one when both exist).
	Role  string  `json:"role"`
	DType string  `json:"dtype"`
	Shape []int64 `json:"shape"`
	// Changes lists role, dtype, shape, bytes, path, compression and
	// tolerance.* differences.
	Changes []Change `json:"changes,omitempty"`
	// DataChanged is true when the sha256 of the .npy bytes differs.
	DataChanged bool `json:"data_changed,omitempty"`
	// Values compares the elements when the data changed and dtype and
	// shape agree; otherwise ValuesSkipped says why it is nil.
	Values        *Values `json:"values,omitempty"`
	ValuesSkipped string  `json:"values_skipped,omitempty"`
}

// Values summarises an element-wise comparison of two tensors with the same
// dtype and shape. See the package documentation for the rules.
type Values struct {
	Elements int64 `json:"elements"`
	// Changed counts elements whose stored bits differ.
	Changed int64   `json:"changed"`
	Share   float64 `json:"share"`
	// MaxAbs and MaxRel are over changed elements that are finite on both
	// sides; Worst and MaxRelAt are their indices (first on ties).
	MaxAbs   Number  `json:"max_abs"`
	MaxRel   Number  `json:"max_rel"`
	First    []int64 `json:"first"`
	Worst    []int64 `json:"worst"`
	MaxRelAt []int64 `json:"max_rel_at"`
	// NaNMismatch counts elements that are NaN on exactly one side;
	// InfMismatch elements where either side is infinite (and not NaN).
	NaNMismatch    int64   `json:"nan_mismatch"`
	InfMismatch    int64   `json:"inf_mismatch"`
	FirstNonFinite []int64 `json:"first_non_finite,omitempty"`
	// Integer is true when the dtype is an integer or bool type, compared
	// exactly.
	Integer bool `json:"integer,omitempty"`
}

// Number is a float64 that marshals +-Inf and NaN as the JSON strings
// "+Inf", "-Inf" and "NaN" (JSON numbers cannot hold them): compare's
// Float, internal/jsonnum.
type Number = jsonnum.Float

// Identical reports whether the bundles have no difference at all.
func (r *Report) Identical() bool {
	c := r.Counts
	return len(r.Manifest) == 0 && c.Cases.Changed+c.Cases.Added+c.Cases.Removed == 0 &&
		c.Tensors.Changed+c.Tensors.Added+c.Tensors.Removed == 0
}

// Bundles compares the bundle in oldDir with the one in newDir (each a
// directory holding manifest.json, or the manifest.json itself).
func Bundles(ctx context.Context, oldDir, newDir string, opts Options) (*Report, error) {
	if opts.Jobs < 1 {
		opts.Jobs = 1
	}
	if opts.ChunkElems <= 0 {
		opts.ChunkElems = DefaultChunkElems
	}
	if !(opts.RelFloor > 0) {
		opts.RelFloor = DefaultRelFloor
	}
	om, err := manifests.ReadManifest(oldDir)
	if err != nil {
		return nil, fmt.Errorf("diff: old bundle: %w", err)
	}
	nm, err := manifests.ReadManifest(newDir)
	if err != nil {
		return nil, fmt.Errorf("diff: new bundle: %w", err)
	}
	oldRoot, newRoot := bundleRoot(oldDir), bundleRoot(newDir)
	r := &Report{Old: oldDir, New: newDir, RelFloor: opts.RelFloor, Manifest: manifestChanges(om, nm), Cases: []CaseDiff{}}

	var tasks []valueTask
	for ci := range om.Cases {
		oc := &om.Cases[ci]
		nc := nm.Case(oc.ID)
		if nc == nil {
			r.Cases = append(r.Cases, wholeCase(oc, StatusRemoved))
			continue
		}
		cd, err := compareCase(oc, nc, opts, &tasks, len(r.Cases))
		if err != nil {
			return nil, err
		}
		r.Cases = append(r.Cases, cd)
	}
	for ci := range nm.Cases {
		if om.Case(nm.Cases[ci].ID) == nil {
			r.Cases = append(r.Cases, wholeCase(&nm.Cases[ci], StatusAdded))
		}
	}

	if err := runTasks(ctx, oldRoot, newRoot, tasks, opts); err != nil {
		return nil, err
	}
	for _, t := range tasks {
		r.Cases[t.caseIdx].Tensors[t.tensorIdx].Values = t.result
	}

	kept := r.Cases[:0]
	for _, cd := range r.Cases {
		r.Counts.Cases.add(cd.Status)
		listed := cd.Tensors[:0]
		for _, td := range cd.Tensors {
			r.Counts.Tensors.add(td.Status)
			if td.Status != StatusUnchanged {
				listed = append(listed, td)
			}
		}
		cd.Tensors = listed
		if cd.Status != StatusUnchanged {
			kept = append(kept, cd)
		}
	}
	r.Cases = kept
	return r, nil
}

// bundleRoot returns the directory tensor paths are relative to.
func bundleRoot(p string) string {
	if d, ok := manifestDir(p); ok {
		return d
	}
	return p
}

func manifestChanges(o, n *manifests.Manifest) []Change {
	type field struct {
		name     string
		old, new any
	}
	fields := []field{
		{"schema_version", o.SchemaVersion, n.SchemaVersion},
		{"suite", o.Suite, n.Suite},
		{"suite_version", o.SuiteVersion, n.SuiteVersion},
		{"spec_version", o.SpecVersion, n.SpecVersion},
		{"generator", o.Generator, n.Generator},
		{"seed", o.Seed, n.Seed},
		{"hidden_commitment", o.HiddenCommitment, n.HiddenCommitment},
		{"shard", o.Shard, n.Shard},
		{"digest", o.Digest, n.Digest},
	}
	out := []Change{}
	for _, f := range fields {
		if f.old != f.new {
			out = append(out, Change{Path: f.name, Old: fieldJSON(f.old), New: fieldJSON(f.new)})
		}
	}
	// A pipeline chain's recipe params (requests, schedule) live only in
	// the chain list; the stage cases show their effects, not the cause.
	if len(o.Chains)+len(n.Chains) > 0 {
		byID := func(chs []manifests.Chain) []byte {
			m := make(map[string]manifests.Chain, len(chs))
			for _, ch := range chs {
				m[ch.ID] = ch
			}
			return compact(m)
		}
		if ch, err := JSON("chains", byID(o.Chains), byID(n.Chains)); err == nil {
			out = append(out, ch...)
		}
	}
	return out
}

// fieldJSON marshals a manifest field; an empty string (an omitted field)
// is absent.
func fieldJSON(v any) json.RawMessage {
	if s, ok := v.(string); ok && s == "" {
		return nil
	}
	return compact(v)
}

func wholeCase(c *manifests.Case, status string) CaseDiff {
	cd := CaseDiff{ID: c.ID, Status: status, Op: c.Op}
	for i := range c.Tensors {
		t := &c.Tensors[i]
		cd.Tensors = append(cd.Tensors, TensorDiff{Name: t.Name, Status: status, Role: t.Role, DType: t.DType, Shape: t.Shape})
	}
	return cd
}

func compareCase(oc, nc *manifests.Case, opts Options, tasks *[]valueTask, caseIdx int) (CaseDiff, error) {
	cd := CaseDiff{ID: nc.ID, Status: StatusUnchanged, Op: nc.Op}
	if oc.Op != nc.Op {
		cd.Changes = append(cd.Changes, Change{Path: "op", Old: compact(oc.Op), New: compact(nc.Op)})
	}
	if oc.Split != nc.Split {
		cd.Changes = append(cd.Changes, Change{Path: "split", Old: fieldJSON(oc.Split), New: fieldJSON(nc.Split)})
	}
	for _, p := range []struct {
		name     string
		old, new json.RawMessage
	}{{"params", oc.Params, nc.Params}, {"info", oc.Info, nc.Info}} {
		ch, err := JSON(p.name, p.old, p.new)
		if err != nil {
			return cd, fmt.Errorf("diff: case %q: %w", nc.ID, err)
		}
		cd.Changes = append(cd.Changes, ch...)
	}
	changed := len(cd.Changes) > 0
	for ti := range oc.Tensors {
		ot := &oc.Tensors[ti]
		nt := nc.Tensor(ot.Name)
		if nt == nil {
			cd.Tensors = append(cd.Tensors, TensorDiff{Name: ot.Name, Status: StatusRemoved, Role: ot.Role, DType: ot.DType, Shape: ot.Shape})
			changed = true
			continue
		}
		td, err := compareTensor(ot, nt)
		if err != nil {
			return cd, fmt.Errorf("diff: case %q tensor %q: %w", nc.ID, nt.Name, err)
		}
		if td.Status != StatusUnchanged {
			changed = true
		}
		if td.DataChanged {
			switch {
			case ot.DType != nt.DType:
				td.ValuesSkipped = "dtype changed"
			case !slices.Equal(ot.Shape, nt.Shape):
				td.ValuesSkipped = "shape changed"
			case opts.ValuesLimit < 0:
				td.ValuesSkipped = "value comparison disabled"
			case opts.ValuesLimit > 0 && max(ot.Bytes, nt.Bytes) > opts.ValuesLimit:
				td.ValuesSkipped = fmt.Sprintf("larger than the values limit (%d bytes)", opts.ValuesLimit)
			default:
				*tasks = append(*tasks, valueTask{caseIdx: caseIdx, tensorIdx: len(cd.Tensors), caseID: nc.ID, old: ot, new: nt})
			}
		}
		cd.Tensors = append(cd.Tensors, td)
	}
	for ti := range nc.Tensors {
		nt := &nc.Tensors[ti]
		if oc.Tensor(nt.Name) == nil {
			cd.Tensors = append(cd.Tensors, TensorDiff{Name: nt.Name, Status: StatusAdded, Role: nt.Role, DType: nt.DType, Shape: nt.Shape})
			changed = true
		}
	}
	if changed {
		cd.Status = StatusChanged
	}
	return cd, nil
}

func compareTensor(ot, nt *manifests.Tensor) (TensorDiff, error) {
	td := TensorDiff{Name: nt.Name, Status: StatusUnchanged, Role: nt.Role, DType: nt.DType, Shape: nt.Shape}
	add := func(path string, o, n any) {
		td.Changes = append(td.Changes, Change{Path: path, Old: fieldJSON(o), New: fieldJSON(n)})
	}
	if ot.Role != nt.Role {
		add("role", ot.Role, nt.Role)
	}
	if ot.DType != nt.DType {
		add("dtype", ot.DType, nt.DType)
	}
	if !slices.Equal(ot.Shape, nt.Shape) {
		add("shape", ot.Shape, nt.Shape)
	}
	if ot.Bytes != nt.Bytes {
		add("bytes", ot.Bytes, nt.Bytes)
	}
	if ot.Path != nt.Path {
		add("path", ot.Path, nt.Path)
	}
	if ot.Compression != nt.Compression {
		add("compression", ot.Compression, nt.Compression)
	}
	tol, err := JSON("tolerance", ot.Tolerance, nt.Tolerance)
	if err != nil {
		return td, err
	}
	td.Changes = append(td.Changes, tol...)
	td.DataChanged = ot.SHA256 != nt.SHA256
	if len(td.Changes) > 0 || td.DataChanged {
		td.Status = StatusChanged
	}
	return td, nil
}

type valueTask struct {
	caseIdx, tensorIdx int
	caseID             string
	old, new           *manifests.Tensor
	result             *Values
	err                error
}

// runTasks compares the tensors' values with opts.Jobs workers. Every task
// runs to its end, so the error returned (the first in manifest order) does
// not depend on scheduling.
func runTasks(ctx context.Context, oldRoot, newRoot string, tasks []valueTask, opts Options) error {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(opts.Jobs, len(tasks)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var bufs chunkBuffers
			for i := range next {
				t := &tasks[i]
				t.result, t.err = compareValues(ctx, oldRoot, newRoot, t.old, t.new, opts, &bufs)
			}
		}()
	}
	for i := range tasks {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	for _, t := range tasks {
		if t.err != nil {
			return fmt.Errorf("diff: case %q tensor %q: %w", t.caseID, t.new.Name, t.err)
		}
	}
	return nil
}
