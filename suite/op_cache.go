package suite

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/goldset/goldset/compare"
	"github.com/goldset/goldset/gen"
	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/manifests"
)

// ---- reshape_and_cache (docs/spec.md §3) ----

// reshape_and_cache: scatter key/value [t,hkv,d] into paged caches
// [nb,bs,hkv,d] at slot_mapping's slots (negative: skipped); the goldens
// are the caches after the write, graded bit for bit.
var _ = register(&op{
	name:   "reshape_and_cache",
	export: exportSpec{flashinfer: "kv_cache_append", ascend: "ReshapeAndCache", axes: cacheAxes},
	inputs: []string{"key", "value", "slot_mapping", "key_cache", "value_cache"},
	outputs: []output{
		{name: "key_cache_out", tol: compare.Exact.WithBasis("exact/cache")},
		{name: "value_cache_out", tol: compare.Exact.WithBasis("exact/cache")},
	},
	plan:     planReshapeAndCache,
	controls: cacheControls,
	work:     cacheWork,
})

// cacheAxes names the dimensions of reshape_and_cache's tensors for the
// exporters (slot_mapping's length is t_s, not T: left to its own axis).
var cacheAxes = map[string][]string{
	"key": {"T", "HKV", "D"}, "value": {"T", "HKV", "D"},
	"key_cache": {"NB", "BS", "HKV", "D"}, "value_cache": {"NB", "BS", "HKV", "D"},
	"key_cache_out": {"NB", "BS", "HKV", "D"}, "value_cache_out": {"NB", "BS", "HKV", "D"},
}

type cacheParams struct {
	T     int    `json:"t"`   // tokens in key/value
	TS    int    `json:"t_s"` // slot_mapping length (default T)
	Hkv   int    `json:"hkv"`
	D     int    `json:"d"`
	BS    int    `json:"bs"`
	NB    int    `json:"nb"`
	DType string `json:"dtype"`
	// SkipFrac of the slot_mapping entries are negative (cycling -1, -7,
	// INT32_MIN); AllNegative makes every entry negative.
	SkipFrac    float64 `json:"skip_frac"`
	AllNegative bool    `json:"all_negative,omitempty"`
	// Slot0 forces slot 0 (a real slot) to be written.
	Slot0 bool `json:"slot0,omitempty"`
	// Hostile pre-fills the caches with NaN sentinels instead of values.
	Hostile bool `json:"hostile,omitempty"`
}

func planReshapeAndCache(raw json.RawMessage) (*casePlan, error) {
	var p cacheParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if p.TS == 0 {
		p.TS = p.T
	}
	for _, e := range []error{checkRange("t", p.T, 1, 1<<24), checkRange("t_s", p.TS, 1, p.T), checkRange("hkv", p.Hkv, 1, 1024),
		checkRange("d", p.D, 1, maxHeadDim), checkRange("bs", p.BS, 1, maxBlockSize), checkRange("nb", p.NB, 1, 1<<24),
		checkFloatDType("dtype", p.DType)} {
		if e != nil {
			return nil, e
		}
	}
	if !(p.SkipFrac >= 0 && p.SkipFrac <= 1) {
		return nil, errParams("skip_frac = %v, want 0..1", p.SkipFrac)
	}
	if p.TS-p.numNeg() > p.NB*p.BS {
		return nil, errParams("%d valid slots do not fit nb*bs = %d", p.TS-p.numNeg(), p.NB*p.BS)
	}
	if err := checkHeld("key", p.T, p.Hkv, p.D); err != nil {
		return nil, err
	}
	cacheElems, err := checkElems("cache", p.NB, p.BS, p.Hkv, p.D)
	if err != nil {
		return nil, err
	}
	sz := dtypeSize(p.DType)
	bytes := 4*cacheElems*sz + 2*int64(p.T*p.Hkv*p.D)*sz + int64(p.TS)*4
	return &casePlan{params: canonical(p), dtype: p.DType, bytes: bytes, build: func(c *caseCtx) error { return buildReshapeAndCache(c, &p) }}, nil
}

// numNeg is the number of negative entries gen.SlotMapping draws.
func (p *cacheParams) numNeg() int {
	if p.AllNegative {
		return p.TS
	}
	return int(math.Floor(float64(p.SkipFrac*float64(p.TS)) + 0.5))
}

// cacheBatchElems is how many cache elements reshape_and_cache produces at
// once: 4 MiB of float16 per buffer, 20 buffers queued at most (writeAhead+1
// for each of the four caches).
const cacheBatchElems = 1 << 21

func buildReshapeAndCache(c *caseCtx, p *cacheParams) error {
	row := p.Hkv * p.D
	kvShape := []int64{int64(p.T), int64(p.Hkv), int64(p.D)}
	// The kernel copies bits: half dtypes need no float32 values.
	key := normalValues(c.stream("key"), p.DType, p.T*row, 0, 1, false)
	value := normalValues(c.stream("value"), p.DType, p.T*row, 0, 1, false)
	if err := c.writeFloat(tensorSpec{name: "key", role: roleInput, dtype: p.DType, shape: kvShape}, &key); err != nil {
		return err
	}
	if err := c.writeFloat(tensorSpec{name: "value", role: roleInput, dtype: p.DType, shape: kvShape}, &value); err != nil {
		return err
	}
	sm, err := gen.SlotMapping(c.stream("slot_mapping"), gen.SlotSpec{Tokens: p.TS, NumSlots: p.NB * p.BS, NegFrac: p.SkipFrac, AllNeg: p.AllNegative, ForceSlot0: p.Slot0})
	if err != nil {
		return err
	}
	if err := c.writeInts(tensorSpec{name: "slot_mapping", role: roleInput, dtype: "int32", shape: []int64{int64(p.TS)}}, sm); err != nil {
		return err
	}
	written := countValid(sm)
	c.setInfo("slots_written", written)
	c.addFact("slots_written", int64(written))
	c.setInfo("slots_skipped", p.TS-written)

	cshape := []int64{int64(p.NB), int64(p.BS), int64(p.Hkv), int64(p.D)}
	specs := []tensorSpec{
		{name: "key_cache", role: roleInput, dtype: p.DType, shape: cshape},
		{name: "value_cache", role: roleInput, dtype: p.DType, shape: cshape},
		{name: "key_cache_out", role: roleGolden, dtype: p.DType, shape: cshape},
		{name: "value_cache_out", role: roleGolden, dtype: p.DType, shape: cshape},
	}
	outs := make([]*tensorOut, len(specs))
	fail := func(err error) error {
		for _, t := range outs {
			if t != nil {
				t.abort()
			}
		}
		return err
	}
	for i, ts := range specs {
		t, err := c.create(ts)
		if err != nil {
			return fail(err)
		}
		outs[i] = t
	}
	// Stream the caches in batches of blocks, produced straight into the
	// tensors' queued buffers (their bytes are the .npy data): each batch
	// of both input caches is generated, copied into the golden caches'
	// buffers, queued, and the copies are updated in place by the golden
	// kernel with the slot mapping made local to the batch. Each cache is
	// generated once and copied once; nothing else holds a batch.
	be := p.BS * row
	batch := max(1, cacheBatchElems/be)
	sz := int(dtypeSize(p.DType))
	streams := [2]gen.Stream{c.stream("key_cache"), c.stream("value_cache")}
	local := make([]int32, len(sm))
	var raw [4][]byte
	for b0 := 0; b0 < p.NB; b0 += batch {
		b1 := min(p.NB, b0+batch)
		n := (b1 - b0) * be
		lo, hi := int32(b0*p.BS), int32(b1*p.BS)
		for t, s := range sm {
			local[t] = -1
			if s >= lo && s < hi {
				local[t] = s - lo
			}
		}
		for k := range raw {
			var err error
			if raw[k], err = outs[k].reserve(n * sz); err != nil {
				return fail(err)
			}
		}
		at := int64(b0) * int64(be)
		for k := 0; k < 2; k++ {
			part := viewFloats(p.DType, raw[k])
			switch {
			case p.Hostile && part.bits != nil:
				gen.Fill(part.bits, genDType(p.DType), math.NaN())
			case p.Hostile:
				gen.Fill(part.vals, gen.F32, math.NaN())
			default:
				gen.Parallel(0, at, n, func(lo, hi int) {
					fillValues(part.slice(lo, hi), streams[k], at+int64(lo), false) // the kernel copies bits
				})
			}
			copy(raw[2+k], raw[k])
			toLittleEndian(raw[k], sz)
			if err := outs[k].submit(raw[k]); err != nil {
				return fail(err)
			}
		}
		kc, vc := viewFloats(p.DType, raw[2]), viewFloats(p.DType, raw[3])
		dims := golden.CacheDims{T: p.T, Hkv: p.Hkv, D: p.D, NB: b1 - b0, BS: p.BS}
		var err error
		if kc.bits != nil {
			err = golden.ReshapeAndCache(kc.bits, vc.bits, key.bits, value.bits, kc.bits, vc.bits, local, dims)
		} else {
			err = golden.ReshapeAndCache(kc.vals, vc.vals, key.vals, value.vals, kc.vals, vc.vals, local, dims)
		}
		if err != nil {
			return fail(err)
		}
		for k := 2; k < 4; k++ {
			toLittleEndian(raw[k], sz)
			if err := outs[k].submit(raw[k]); err != nil {
				return fail(err)
			}
		}
	}
	for i, t := range outs {
		outs[i] = nil
		if err := t.close(); err != nil {
			return fail(err)
		}
	}
	return nil
}

func cacheControls(d caseData) ([]Control, error) {
	var p cacheParams
	if err := json.Unmarshal(d.c.Params, &p); err != nil {
		return nil, err
	}
	ctl := []Control{zeros(d, "key_cache_out")}
	sm, err := d.i32("slot_mapping")
	if err != nil {
		return nil, err
	}
	t := slices.IndexFunc(sm, func(s int32) bool { return s >= 0 })
	if t >= 0 && p.NB > 1 {
		gold, _, err := d.floats("key_cache_out")
		if err != nil {
			return nil, err
		}
		in, _, err := d.floats("key_cache")
		if err != nil {
			return nil, err
		}
		row := p.Hkv * p.D
		s := int(sm[t])
		wrong := ((s/p.BS+1)%p.NB)*p.BS + s%p.BS
		bad := slices.Clone(gold)
		copy(bad[s*row:(s+1)*row], in[s*row:(s+1)*row])           // the right slot keeps its old value
		copy(bad[wrong*row:(wrong+1)*row], gold[s*row:(s+1)*row]) // the key lands one block over
		ctl = append(ctl, Control{Name: "wrong_block", Note: fmt.Sprintf("token %d written to slot %d instead of %d", t, wrong, s), Outputs: []ControlOutput{d.output("key_cache_out", bad)}})
	}
	if t := slices.IndexFunc(sm, func(s int32) bool { return s < 0 }); t >= 0 {
		// Graph padding: a kernel that does not skip slot -1 and indexes
		// the cache the way torch does (cache[-1]) overwrites the last slot.
		gold, _, err := d.floats("key_cache_out")
		if err != nil {
			return nil, err
		}
		key, _, err := d.floats("key")
		if err != nil {
			return nil, err
		}
		row := p.Hkv * p.D
		bad := slices.Clone(gold)
		copy(bad[len(bad)-row:], key[t*row:(t+1)*row])
		if !slices.Equal(bad, gold) {
			ctl = append(ctl, Control{Name: "pad_slot_write", Note: fmt.Sprintf("token %d (slot %d) written through the pad slot into the cache's last slot", t, sm[t]),
				Outputs: []ControlOutput{d.output("key_cache_out", bad)}})
		}
	}
	gold, _, err := d.floats("value_cache_out")
	if err != nil {
		return nil, err
	}
	ctl = append(ctl, Control{Name: "golden_copy", Pass: true, Note: "the golden value cache itself", Outputs: []ControlOutput{d.output("value_cache_out", gold)}})
	return ctl, nil
}

// cacheWork: slot_mapping read whole; key and value rows read and their
// cache slots written only for the slots_written non-negative slots (the
// caches are updated in place: the rest is never touched).
func cacheWork(w workIn) (manifests.Work, error) {
	p, err := decodeWork[cacheParams](w)
	if err != nil {
		return manifests.Work{}, err
	}
	n, err := w.fact("slots_written")
	if err != nil {
		return manifests.Work{}, err
	}
	sm, err := w.bytes("slot_mapping")
	if err != nil {
		return manifests.Work{}, err
	}
	kv := 2 * n * int64(p.Hkv*p.D) * dtypeSize(p.DType)
	return manifests.Work{BytesRead: sm + kv, BytesWritten: kv, FlopDType: p.DType}, nil
}
