package gen

import (
	"errors"
	"math"
	"testing"

	"github.com/goldset/goldset/npy"
)

func TestOutlierRow(t *testing.T) {
	s := NewStream(3, "sm", "X")
	for _, dt := range []DType{F16, BF16, F32} {
		big := OutlierMagnitude(dt)
		for _, kind := range []int{OutlierUniform, OutlierHigh, OutlierLow} {
			v := make([]float64, 781)
			switch dt {
			case F32:
				row := make([]float32, 781)
				OutlierRow(s, row, 1000, dt, kind, big)
				Load(v, row, dt)
			default:
				row := make([]uint16, 781)
				OutlierRow(s, row, 1000, dt, kind, big)
				Load(v, row, dt)
			}
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, x := range v {
				lo, hi = min(lo, x), max(hi, x)
			}
			if math.IsInf(lo, 0) || math.IsInf(hi, 0) {
				t.Fatalf("%v kind %d: infinite value", dt, kind)
			}
			switch kind {
			case OutlierUniform:
				if lo > -0.9*big || hi < 0.9*big {
					t.Errorf("%v uniform row spans [%v, %v], want ~[-%v, %v]", dt, lo, hi, big, big)
				}
			case OutlierHigh:
				if lo < big*0.99-10 || hi > big*1.01+10 {
					t.Errorf("%v high row spans [%v, %v]", dt, lo, hi)
				}
			case OutlierLow:
				if hi > -big*0.99+10 || lo < -big*1.01-10 {
					t.Errorf("%v low row spans [%v, %v]", dt, lo, hi)
				}
			}
		}
	}
	// fp32 high row: the N(0,1) noise survives rounding at 1e4.
	row := make([]float32, 100)
	OutlierRow(s, row, 0, F32, OutlierHigh, 1e4)
	z := make([]float64, 100)
	Normal(s, z, 0, F64, 1)
	for i := range row {
		if row[i] != float32(1e4+z[i]) {
			t.Fatalf("element %d = %v, want float32(1e4 + %v)", i, row[i], z[i])
		}
	}
}

func TestMaskLeading(t *testing.T) {
	const rows, cols, tile = 3, 781, 256
	x := make([]uint16, rows*cols)
	Normal(NewStream(1, "m", "X"), x, 0, F16, 1)
	MaskLeading(x, F16, cols, tile)
	for i, h := range x {
		isNegInf := h == 0xfc00
		if (i%cols < tile) != isNegInf || (!isNegInf && math.IsInf(npy.F16ToF64(h), 0)) {
			t.Fatalf("element %d (col %d) = %#04x", i, i%cols, h)
		}
	}
	f := make([]float32, 2*8)
	MaskLeading(f, F32, 8, 8)
	for _, v := range f {
		if !math.IsInf(float64(v), -1) {
			t.Fatal("fully masked row has a finite value")
		}
	}
}

func TestPoisonCache(t *testing.T) {
	spec := LayoutSpec{Seqs: 3, BlockSize: 16, Lens: []int32{5, 40, 16}, Pad: PadPoison, SharedPairs: 1, ExtraBlocks: 2}
	l, err := NewPagedLayout(spec, NewStream(1, "c", "l"), NewStream(1, "c", "t"))
	if err != nil {
		t.Fatal(err)
	}
	const hkv, d = 2, 8
	cache := make([]uint16, l.NumBlocks*l.BlockSize*hkv*d)
	Normal(NewStream(1, "c", "k"), cache, 0, BF16, 1)
	PoisonCache(cache, BF16, l, hkv*d)
	// A slot is read iff some sequence's token maps to it.
	read := make([]bool, l.NumBlocks*l.BlockSize)
	for b, L := range l.Lens {
		for j := range int(L) {
			p, o := l.Slot(b, j)
			read[p*l.BlockSize+o] = true
		}
	}
	for slot, r := range read {
		for _, h := range cache[slot*hkv*d : (slot+1)*hkv*d] {
			if isNaN := h == 0x7fc0; isNaN == r {
				t.Fatalf("slot %d read=%v has %#04x", slot, r, h)
			}
		}
	}
	if l.Live[l.PoisonBlock] != 0 {
		t.Fatal("poison block is live")
	}
}

// needleLayout: 2 sequences, Hq=8, Hkv=2 (G=4), D=64, BS=16.
func needleSetup(t *testing.T) (*PagedLayout, Heads, []uint16, []uint16) {
	l, err := NewPagedLayout(LayoutSpec{Seqs: 2, BlockSize: 16, Lens: []int32{1000, 600}}, Stream{}, NewStream(4, "n", "block_tables"))
	if err != nil {
		t.Fatal(err)
	}
	h := Heads{Q: 8, KV: 2, D: 64}
	q := make([]uint16, l.Seqs*h.Q*h.D)
	Normal(NewStream(4, "n", "query"), q, 0, F16, 1)
	kc := make([]uint16, l.NumBlocks*l.BlockSize*h.KV*h.D)
	Normal(NewStream(4, "n", "key_cache"), kc, 0, F16, 1)
	return l, h, q, kc
}

func TestPlantNeedle(t *testing.T) {
	l, h, q, kc0 := needleSetup(t)
	scale := 1 / math.Sqrt(float64(h.D))
	for _, pos := range []int{0, 511, 512, 999} {
		kc := append([]uint16(nil), kc0...)
		got, err := PlantNeedle(kc, q, F16, l, h, 0, pos, scale, 15)
		if err != nil {
			t.Fatal(err)
		}
		if got < 14.9 {
			t.Fatalf("pos %d: achieved logit %v < 15", pos, got)
		}
		// The needle dominates: for every query head it is the arg max of
		// the logits and holds most of the softmax mass.
		qv, k := make([]float64, h.D), make([]float64, h.D)
		for hq := range h.Q {
			Load(qv, q[hq*h.D:(hq+1)*h.D], F16)
			logits := make([]float64, l.Lens[0])
			mx := math.Inf(-1)
			for j := range logits {
				p, o := l.Slot(0, j)
				Load(k, kc[((p*l.BlockSize+o)*h.KV+hq/(h.Q/h.KV))*h.D:][:h.D], F16)
				s := 0.0
				for e := range k {
					s += float64(qv[e] * k[e])
				}
				logits[j] = scale * s
				mx = max(mx, logits[j])
			}
			sum := 0.0
			for _, v := range logits {
				sum += math.Exp(v - mx)
			}
			if logits[pos] != mx || math.Exp(logits[pos]-mx)/sum < 0.9 {
				t.Fatalf("pos %d head %d: needle weight %v", pos, hq, math.Exp(logits[pos]-mx)/sum)
			}
		}
	}
	// A query group that cancels out is degenerate.
	qz := make([]float64, 2*4)
	qz[0], qz[4] = 1, -1
	if err := NeedleKey(make([]float64, 4), qz, 4, 1, 10); !errors.Is(err, ErrDegen) {
		t.Fatalf("err = %v, want ErrDegen", err)
	}
}

// refScores is an independent Quest score computation (spec 5a/5b).
func refScores(kc, q []uint16, l *PagedLayout, h Heads, seq, kv int) [][]float64 {
	g, d := h.Q/h.KV, h.D
	nb := l.NumLogical(seq)
	out := make([][]float64, g)
	for hh := range g {
		out[hh] = make([]float64, nb)
		for i := range nb {
			s := 0.0
			for e := range d {
				kmax, kmin := math.Inf(-1), math.Inf(1)
				for j := i * l.BlockSize; j < min(int(l.Lens[seq]), (i+1)*l.BlockSize); j++ {
					p, o := l.Slot(seq, j)
					v := npy.F16ToF64(kc[((p*l.BlockSize+o)*h.KV+kv)*d+e])
					kmax, kmin = max(kmax, v), min(kmin, v)
				}
				qv := npy.F16ToF64(q[(seq*h.Q+kv*g+hh)*d+e])
				s += max(qv*kmax, qv*kmin)
			}
			out[hh][i] = s
		}
	}
	return out
}

func TestPlantQuest(t *testing.T) {
	l, h, q, kc := needleSetup(t)
	chosen := []int{3, 10, 20, 62} // sequence 0 has 63 blocks; 62 is partial
	got, err := PlantQuest(kc, q, F16, l, h, 0, 1, chosen, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if got < 0.5 {
		t.Fatalf("achieved margin %v < 0.5", got)
	}
	sc := refScores(kc, q, l, h, 0, 1)
	isChosen := map[int]bool{3: true, 10: true, 20: true, 62: true}
	minGap := math.Inf(1)
	for _, row := range sc {
		lo, hi := math.Inf(1), math.Inf(-1)
		for i, v := range row {
			if isChosen[i] {
				lo = min(lo, v)
			} else {
				hi = max(hi, v)
			}
		}
		minGap = min(minGap, lo-hi)
	}
	if minGap != got {
		t.Fatalf("independent margin %v, PlantQuest reported %v", minGap, got)
	}
	// The other KV head is untouched: its unplanted ranking is not forced.
	other := refScores(kc, q, l, h, 0, 0)
	forced := true
	for _, row := range other {
		for i, v := range row {
			if !isChosen[i] && v > row[3] {
				forced = false
			}
		}
	}
	if forced {
		t.Error("KV head 0 also ranks block 3 first: planting leaked across heads")
	}
	for _, bad := range [][]int{{63}, {-1}, {2, 2}} {
		if _, err := PlantQuest(kc, q, F16, l, h, 0, 0, bad, 1); !errors.Is(err, ErrSpec) {
			t.Errorf("blocks %v: err = %v, want ErrSpec", bad, err)
		}
	}
	ls, err := NewPagedLayout(LayoutSpec{Seqs: 2, BlockSize: 16, Lens: []int32{100, 100}, SharedPairs: 1}, Stream{}, NewStream(1, "s", "t"))
	if err != nil {
		t.Fatal(err)
	}
	kcs := make([]uint16, ls.NumBlocks*ls.BlockSize*h.KV*h.D)
	if _, err := PlantQuest(kcs, q, F16, ls, h, 1, 0, []int{0}, 1); !errors.Is(err, ErrShared) {
		t.Errorf("shared block: err = %v, want ErrShared", err)
	}
	if _, err := PlantNeedle(kcs, q, F16, ls, h, 1, 3, 0.125, 10); !errors.Is(err, ErrShared) {
		t.Errorf("needle in shared block: err = %v, want ErrShared", err)
	}
	if _, err := PlantNeedle(kcs, q, F16, ls, h, 1, 16, 0.125, 10); err != nil {
		t.Errorf("needle in an unshared block: %v", err)
	}
}
