package suite

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/npy"
)

// TestReshapeAndCacheBundle reads reshape_and_cache bundles back and checks
// the golden caches byte by byte against ops.md §3's loop run on the
// bundle's own inputs: written slots hold the key/value rows, every other
// byte equals the input cache. The fp16 case spans three write batches
// (the last one partial), so batch-local slot mapping and the in-place
// update of the queued buffers are both exercised.
func TestReshapeAndCacheBundle(t *testing.T) {
	const rec = `{"name": "rcb", "version": "0.1.0", "spec_version": 1, "seed": 11, "cases": [
  {"id": "f16", "op": "reshape_and_cache", "split": "public", "params": {"t": 3000, "hkv": 2, "d": 64, "bs": 64, "nb": 600, "dtype": "float16", "skip_frac": 0.1, "slot0": true}},
  {"id": "f32", "op": "reshape_and_cache", "split": "public", "params": {"t": 50, "t_s": 40, "hkv": 3, "d": 8, "bs": 4, "nb": 30, "dtype": "float32", "skip_frac": 0.2}},
  {"id": "bf16-hostile", "op": "reshape_and_cache", "split": "public", "params": {"t": 20, "hkv": 1, "d": 8, "bs": 4, "nb": 9, "dtype": "bfloat16", "skip_frac": 0.3, "hostile": true}}]}`
	r, err := manifests.ParseRecipe("rcb", []byte(rec))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	buildTo(t, r, dir, Options{})
	if batch := max(1, cacheBatchElems/(64*2*64)); 600 <= 2*batch || 600%batch == 0 {
		t.Fatalf("the f16 case (600 blocks) must span three batches of %d blocks, the last partial", batch)
	}
	for _, c := range r.Cases {
		t.Run(c.ID, func(t *testing.T) {
			read := func(name string) (npy.Header, []byte) {
				h, b, err := npy.ReadFile(filepath.Join(dir, "rcb", c.ID, name+".npy"))
				if err != nil {
					t.Fatal(err)
				}
				return h, b
			}
			kh, key := read("key")
			_, value := read("value")
			_, smRaw := read("slot_mapping")
			_, kc := read("key_cache")
			_, vc := read("value_cache")
			_, kcOut := read("key_cache_out")
			_, vcOut := read("value_cache_out")
			rowBytes := len(key) / int(kh.Shape[0])
			wantK, wantV := bytes.Clone(kc), bytes.Clone(vc)
			written := 0
			for i := 0; i+4 <= len(smRaw); i += 4 {
				s := int32(binary.LittleEndian.Uint32(smRaw[i:]))
				if s < 0 {
					continue
				}
				tok := i / 4
				copy(wantK[int(s)*rowBytes:], key[tok*rowBytes:(tok+1)*rowBytes])
				copy(wantV[int(s)*rowBytes:], value[tok*rowBytes:(tok+1)*rowBytes])
				written++
			}
			if written == 0 {
				t.Fatal("no slot written")
			}
			for _, p := range []struct {
				name      string
				got, want []byte
			}{{"key_cache_out", kcOut, wantK}, {"value_cache_out", vcOut, wantV}} {
				if !bytes.Equal(p.got, p.want) {
					t.Errorf("%s differs from the input cache with %d rows written (first difference at byte %d of %d)", p.name, written, firstDiff(p.got, p.want), len(p.want))
				}
			}
			if bytes.Equal(kc, kcOut) {
				t.Error("key_cache_out equals key_cache: nothing was written")
			}
		})
	}
}

// firstDiff is the first index where got and want differ (or the shorter length).
func firstDiff(got, want []byte) int {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return i
		}
	}
	return min(len(got), len(want))
}
