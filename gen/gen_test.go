package gen

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/goldset/goldset/npy"
)

var update = flag.Bool("update", false, "rewrite testdata/zig_tables.txt")

// TestKeyDerivation rebuilds the key from the byte layout in doc.go.
func TestKeyDerivation(t *testing.T) {
	for _, c := range []struct {
		seed         uint64
		caseID, name string
	}{{0, "", ""}, {42, "case/a", "key_cache"}, {1 << 63, "x", "yy"}, {1<<32 + 5, "ünï", "t"}} {
		var msg []byte
		for _, f := range [][]byte{[]byte("goldset/gen/v1"), binary.LittleEndian.AppendUint64(nil, c.seed), []byte(c.caseID), []byte(c.name)} {
			msg = binary.LittleEndian.AppendUint32(msg, uint32(len(f)))
			msg = append(msg, f...)
		}
		sum := sha256.Sum256(msg)
		k := NewStream(c.seed, c.caseID, c.name).Key()
		for i := range k {
			if k[i] != binary.LittleEndian.Uint64(sum[8*i:]) {
				t.Fatalf("%+v: key word %d = %#x, want %#x", c, i, k[i], binary.LittleEndian.Uint64(sum[8*i:]))
			}
		}
	}
	// Fields are length-prefixed: moving a byte between case and tensor
	// must change the key, and so must the seed's upper half.
	if NewStream(1, "ab", "c").Key() == NewStream(1, "a", "bc").Key() {
		t.Error("case/tensor boundary not encoded")
	}
	if NewStream(1, "a", "b").Key() == NewStream(1+1<<32, "a", "b").Key() {
		t.Error("seed upper bits ignored")
	}
}

// TestRegressionVectors pins the first outputs of every stream and
// distribution. The values were produced once by this code (generator
// version 1) and then frozen: they guard against accidental change, and a
// Version bump is the only allowed way to change them.
func TestRegressionVectors(t *testing.T) {
	s := NewStream(42, "case/a", "key_cache")
	check := func(name string, got, want any) {
		t.Helper()
		if g, w := fmt.Sprintf("%#x", got), fmt.Sprintf("%#x", want); g != w {
			t.Errorf("%s = %s, want %s", name, g, w)
		}
	}
	check("key(0,'','')", NewStream(0, "", "").Key(), [4]uint64{0xd6bc889ec2f99b9f, 0xc4e30e51e2c2c3d, 0xf74b24dd9a3423e5, 0xd72745b2329a3947})
	check("key", s.Key(), [4]uint64{0xf2cb892a60b8355c, 0x22895ecac56f2a73, 0xb13fe1117f7b2425, 0x75aaad8c62defb4})

	h := make([]uint16, 8)
	Normal(s, h, 0, F16, 1)
	check("normal f16", h, []uint16{0x34c5, 0x9abe, 0x3ba3, 0x3500, 0xb84e, 0x2ebe, 0xc406, 0x3f8d})
	Normal(s, h, 0, BF16, 0.5)
	check("normal bf16", h, []uint16{0x3e19, 0xbad8, 0x3ef4, 0x3e20, 0xbe8a, 0x3d58, 0xc001, 0x3f72})
	Normal(s, h, 1000, F16, 1)
	check("normal f16 at 1000", h, []uint16{0xb73e, 0x3756, 0xba84, 0x3b85, 0x31bb, 0x3aa5, 0xac99, 0xabaa})
	f := make([]float32, 4)
	Normal(s, f, 0, F32, 1)
	check("normal f32", f32bits(f), []uint32{0x3e989499, 0xbb57c715, 0x3f746ae6, 0x3ea00dcf})
	d := make([]float64, 4)
	Normal(s, d, 0, F64, 1)
	check("normal f64", f64bits(d), []uint64{0x3fd312932b77ae8c, 0xbf6af8e294a356a8, 0x3fee8d5cbd31283f, 0x3fd401b9ef9fd0b5})
	Uniform(s, d, 0, F64, -2, 3)
	check("uniform f64", f64bits(d), []uint64{0xbfffd596a56a8a40, 0xbfdaa5d3c0bac09c, 0x3fdc92d2818b5a98, 0x4007279b3c6ff5dc})
	Uniform(s, h, 0, F16, -6e4, 6e4)
	check("uniform f16", h, []uint16{0xfb4b, 0xf55f, 0xe505, 0x7b04, 0x73d4, 0xf2be, 0x7632, 0x7222})
	iv := make([]int32, 8)
	Ints(s, iv, 0, -5, 1000)
	check("ints", iv, []int32{-3, 313, 486, 978, 631, 381, 710, 602})
	r := s.Rand()
	check("rand", []uint64{r.Uint64(), r.Uint64()}, []uint64{0x3a6820af78091631, 0x8457b757d0ffc037})
	check("perm", s.Rand().Perm(10), []int{2, 5, 9, 7, 6, 4, 8, 3, 0, 1})
	check("choice", s.Rand().Choice(1<<20, 5), []int{239234, 542075, 968016, 688595, 395002})
}

func f32bits(v []float32) []uint32 {
	out := make([]uint32, len(v))
	for i, x := range v {
		out[i] = math.Float32bits(x)
	}
	return out
}

func f64bits(v []float64) []uint64 {
	out := make([]uint64, len(v))
	for i, x := range v {
		out[i] = math.Float64bits(x)
	}
	return out
}

// TestZigTablesFile pins the ziggurat tables, computed at init with
// detmath, to testdata/zig_tables.txt (the copy reimplementers read).
// Refresh with -update only together with a Version bump.
func TestZigTablesFile(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "# gen v%d ziggurat: i k[i] w[i] f[i] (w, f as float64 bits)\n", Version)
	for i := range zigN {
		fmt.Fprintf(&b, "%d %d %016x %016x\n", i, zigK[i], math.Float64bits(zigW[i]), math.Float64bits(zigF[i]))
	}
	const path = "testdata/zig_tables.txt"
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != b.String() {
		t.Fatal("ziggurat tables differ from testdata/zig_tables.txt")
	}
	// Structure: widths grow with the layer index (i >= 1), f falls.
	for i := 2; i < zigN; i++ {
		if !(zigW[i] > zigW[i-1]) || !(zigF[i] < zigF[i-1]) || zigK[i] >= 1<<23 {
			t.Fatalf("layer %d not monotone", i)
		}
	}
	sc := bufio.NewScanner(strings.NewReader(string(want)))
	lines := 0
	for sc.Scan() {
		lines++
	}
	if lines != zigN+1 {
		t.Fatalf("%d lines in %s", lines, path)
	}
}

// TestFastHalfMatchesNpy: the local fast rounding equals npy's converters.
func TestFastHalfMatchesNpy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	edges := []float64{0, math.Copysign(0, -1), 65504, 65519.99, 65520, 65536, -65520, 0x1p-14, 0x1p-14 * (1 - 0x1p-12),
		0x1p-24, 0x1p-25, 0x1.8p-25, 1 + 0x1p-11, 1 + 0x3p-11, 0x1p-126, 0x1.ffp127, 0x1.fep127, 0x1p-133,
		math.Inf(1), math.Inf(-1), math.NaN(), math.MaxFloat64, 5e-324, 1 + 0x1p-8, 1 + 0x3p-8}
	n := 2_000_000
	if testing.Short() {
		n = 200_000
	}
	for i := 0; i < n+len(edges); i++ {
		var x float64
		if i < len(edges) {
			x = edges[i]
		} else if i%2 == 0 {
			x = math.Float64frombits(r.Uint64()) // any bit pattern
		} else {
			x = math.Ldexp(r.NormFloat64(), r.IntN(300)-150) // near the half ranges
		}
		if g, w := f16(x), npy.F16FromF64(x); g != w {
			t.Fatalf("f16(%v) = %#04x, npy %#04x", x, g, w)
		}
		if g, w := bf16(x), npy.BF16FromF64(x); g != w {
			t.Fatalf("bf16(%v) = %#04x, npy %#04x", x, g, w)
		}
	}
}

// TestNormalHalfMatchesNpy: Normal into fp16/bf16 (bulk fast rounding) equals
// rounding the float64 normals with npy, for scales hitting every range.
func TestNormalHalfMatchesNpy(t *testing.T) {
	s := NewStream(3, "half", "x")
	const n = 20000
	z := make([]float64, n)
	Normal(s, z, 0, F64, 1)
	h := make([]uint16, n)
	for _, scale := range []float64{1, 0.01, 1e-7, 3e4, 1e38, -2, 0} {
		for _, dt := range []DType{F16, BF16} {
			Normal(s, h, 0, dt, scale)
			for i, v := range z {
				w := npy.F16FromF64(v * scale)
				if dt == BF16 {
					w = npy.BF16FromF64(v * scale)
				}
				if h[i] != w {
					t.Fatalf("%v scale %v element %d: %#04x, want %#04x", dt, scale, i, h[i], w)
				}
			}
		}
	}
}

// fillAll fills n elements at absolute offset at, for every kind.
func fillAll(s Stream, kind string, at int64, n int) []uint64 {
	out := make([]uint64, n)
	switch kind {
	case "f16", "bf16":
		dt := F16
		if kind == "bf16" {
			dt = BF16
		}
		b := make([]uint16, n)
		Normal(s, b, at, dt, 0.5)
		for i, v := range b {
			out[i] = uint64(v)
		}
	case "f32":
		b := make([]float32, n)
		Normal(s, b, at, F32, 2)
		for i, v := range b {
			out[i] = uint64(math.Float32bits(v))
		}
	case "f64":
		b := make([]float64, n)
		Normal(s, b, at, F64, 1)
		copy(out, f64bits(b))
	case "uniform":
		b := make([]float32, n)
		Uniform(s, b, at, F32, -1, 1)
		for i, v := range b {
			out[i] = uint64(math.Float32bits(v))
		}
	case "ints":
		b := make([]int32, n)
		Ints(s, b, at, -3, 1<<30+7)
		for i, v := range b {
			out[i] = uint64(uint32(v))
		}
	}
	return out
}

var fillKinds = []string{"f16", "bf16", "f32", "f64", "uniform", "ints"}

// TestOffsetIndependence: any split of a range into pieces at arbitrary
// offsets gives the same values as one fill.
func TestOffsetIndependence(t *testing.T) {
	s := NewStream(5, "off", "t")
	r := rand.New(rand.NewPCG(7, 8))
	const n = 5000
	for _, kind := range fillKinds {
		whole := fillAll(s, kind, 0, n)
		for trial := range 20 {
			var got []uint64
			for at := 0; at < n; {
				m := min(n-at, 1+r.IntN(700))
				got = append(got, fillAll(s, kind, int64(at), m)...)
				at += m
			}
			if !slices.Equal(got, whole) {
				t.Fatalf("%s trial %d: piecewise fill differs", kind, trial)
			}
		}
		// Different streams and different offsets really differ.
		if slices.Equal(fillAll(NewStream(5, "off", "u"), kind, 0, 64), whole[:64]) || slices.Equal(whole[:64], whole[ChunkElems:ChunkElems+64]) {
			t.Fatalf("%s: streams or chunks repeat", kind)
		}
	}
}

// TestParallelWorkers: Parallel fills are identical for 1, 2, 7 workers and
// for GOMAXPROCS 1 and 2, and cover every index exactly once.
func TestParallelWorkers(t *testing.T) {
	s := NewStream(6, "par", "t")
	n := 3*pieceElems + 1234
	at := int64(pieceElems/2 + 17)
	fill := func(workers int) []uint16 {
		dst := make([]uint16, n)
		Parallel(workers, at, n, func(lo, hi int) {
			Normal(s, dst[lo:hi], at+int64(lo), F16, 1)
		})
		return dst
	}
	want := make([]uint16, n)
	Normal(s, want, at, F16, 1)
	prev := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prev)
	for _, procs := range []int{1, 2} {
		runtime.GOMAXPROCS(procs)
		for _, w := range []int{1, 2, 7, 0} {
			if !slices.Equal(fill(w), want) {
				t.Fatalf("GOMAXPROCS %d, %d workers: output differs", procs, w)
			}
		}
	}
	for _, c := range []struct {
		at int64
		n  int
	}{{0, 0}, {0, 1}, {5, pieceElems}, {pieceElems, 2 * pieceElems}, {3, 5*pieceElems + 3}} {
		seen := make([]int32, c.n)
		Parallel(3, c.at, c.n, func(lo, hi int) {
			if lo > 0 && (c.at+int64(lo))%pieceElems != 0 {
				t.Errorf("piece start %d not aligned", lo)
			}
			for i := lo; i < hi; i++ {
				seen[i]++ // pieces are disjoint, so no race
			}
		})
		for i, v := range seen {
			if v != 1 {
				t.Fatalf("at=%d n=%d: index %d visited %d times", c.at, c.n, i, v)
			}
		}
	}
}

// TestNormalStats: 1e6 samples of N(0,1): mean, variance, kurtosis and
// tail mass within generous statistical bounds.
func TestNormalStats(t *testing.T) {
	const n = 1_000_000
	z := make([]float64, n)
	for seed := range uint64(3) {
		Normal(NewStream(seed, "stats", "z"), z, 0, F64, 1)
		var m, v, m4 float64
		tail := 0
		for _, x := range z {
			m += x
			if math.Abs(x) > 3 {
				tail++
			}
		}
		m /= n
		for _, x := range z {
			d := x - m
			v += float64(d * d)
			m4 += float64(float64(d*d) * float64(d*d))
		}
		v /= n
		m4 /= n
		// 5 standard errors: mean 1/sqrt(n), variance sqrt(2/n), kurtosis sqrt(24/n).
		if math.Abs(m) > 5/math.Sqrt(n) || math.Abs(v-1) > 5*math.Sqrt(2.0/n) || math.Abs(m4/(v*v)-3) > 5*math.Sqrt(24.0/n) {
			t.Errorf("seed %d: mean %v var %v kurtosis %v", seed, m, v, m4/(v*v))
		}
		// P(|z| > 3) = 0.0026998; binomial sd ~ 52 for n = 1e6.
		if math.Abs(float64(tail)-0.0026998*n) > 5*52 {
			t.Errorf("seed %d: %d samples beyond 3 sigma", seed, tail)
		}
	}
}

func TestUniformAndIntsRange(t *testing.T) {
	s := NewStream(8, "u", "v")
	const n = 200_000
	u := make([]float64, n)
	Uniform(s, u, 0, F64, -3, 5)
	mean := 0.0
	for _, v := range u {
		if v < -3 || v >= 5 {
			t.Fatalf("uniform value %v outside [-3, 5)", v)
		}
		mean += v
	}
	if mean /= n; math.Abs(mean-1) > 5*8/math.Sqrt(12*n) {
		t.Errorf("uniform mean %v, want 1", mean)
	}
	iv := make([]int32, n)
	for _, c := range []struct{ lo, hi int64 }{{0, 1}, {-5, 6}, {0, 1000}, {math.MinInt32, math.MinInt32 + 3}, {math.MaxInt32 - 2, math.MaxInt32 + 1}} {
		Ints(s, iv, 0, c.lo, c.hi)
		counts := map[int32]int{}
		for _, v := range iv {
			if int64(v) < c.lo || int64(v) >= c.hi {
				t.Fatalf("Ints [%d,%d) gave %d", c.lo, c.hi, v)
			}
			counts[v]++
		}
		k := c.hi - c.lo
		if int64(len(counts)) != k {
			t.Fatalf("Ints [%d,%d): %d distinct values", c.lo, c.hi, len(counts))
		}
		want := float64(n) / float64(k)
		for v, got := range counts {
			if math.Abs(float64(got)-want) > 6*math.Sqrt(want)+1 {
				t.Errorf("Ints [%d,%d): value %d drawn %d times, want ~%v", c.lo, c.hi, v, got, want)
			}
		}
	}
}

func TestChoiceAndPerm(t *testing.T) {
	s := NewStream(9, "p", "q")
	for _, n := range []int{1, 2, 10, 1000} {
		p := s.Rand().Perm(n)
		sorted := slices.Clone(p)
		slices.Sort(sorted)
		for i, v := range sorted {
			if v != i {
				t.Fatalf("Perm(%d) is not a permutation", n)
			}
		}
	}
	// The sparse path equals the dense forward Fisher-Yates.
	const n, k = 1 << 20, 3000
	got := s.Rand().Choice(n, k)
	g := s.Rand()
	a := make([]int, n)
	for i := range a {
		a[i] = i
	}
	for i := range k {
		j := i + g.IntN(n-i)
		a[i], a[j] = a[j], a[i]
	}
	if !slices.Equal(got, a[:k]) {
		t.Fatal("sparse Choice differs from dense Fisher-Yates")
	}
	seen := map[int]bool{}
	for _, v := range got {
		if v < 0 || v >= n || seen[v] {
			t.Fatalf("Choice value %d repeated or out of range", v)
		}
		seen[v] = true
	}
	// Every element of [0, 10) appears in each position of Perm(10) about
	// equally often.
	var pos [10][10]int
	r := s.Rand()
	for range 20000 {
		for i, v := range r.Perm(10) {
			pos[i][v]++
		}
	}
	for i := range pos {
		for v, c := range pos[i] {
			if math.Abs(float64(c)-2000) > 6*math.Sqrt(2000) {
				t.Fatalf("Perm: value %d at position %d %d times", v, i, c)
			}
		}
	}
}

// FuzzHalfRounding: the local fast rounding equals npy for any float64.
func FuzzHalfRounding(f *testing.F) {
	for _, v := range []float64{0, 1, 65504, 65520, 0x1p-14, 0x1p-24, 1e38, math.Inf(-1)} {
		f.Add(math.Float64bits(v))
	}
	f.Fuzz(func(t *testing.T, b uint64) {
		x := math.Float64frombits(b)
		if g, w := f16(x), npy.F16FromF64(x); g != w {
			t.Fatalf("f16(%v) = %#04x, npy %#04x", x, g, w)
		}
		if g, w := bf16(x), npy.BF16FromF64(x); g != w {
			t.Fatalf("bf16(%v) = %#04x, npy %#04x", x, g, w)
		}
	})
}

// TestWordsAreUniformsWords: Words is the word Uniform reads (its top 53
// bits are Uniform's u), the low bits those of the documented generator
// step, at any offset.
func TestWordsAreUniformsWords(t *testing.T) {
	s := NewStream(9, "w", "codes")
	const n = 3*ChunkElems + 17
	w := make([]uint64, n)
	Words(s, w, 5)
	u := make([]float64, n)
	Uniform(s, u, 5, F64, 0, 1)
	for i, v := range w {
		if got := float64(v>>11) * 0x1p-53; got != u[i] {
			t.Fatalf("word %d: top bits %v, Uniform %v", i, got, u[i])
		}
		idx := uint64(5 + i)
		st := s.chunkState(idx/ChunkElems) + (idx%ChunkElems+1)*wyInc
		hi, lo := bits.Mul64(st, st^wyXor)
		if v != hi^lo {
			t.Fatalf("word %d = %#x, want %#x", i, v, hi^lo)
		}
	}
}
