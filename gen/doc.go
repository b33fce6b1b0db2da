// Package gen generates goldset's reproducible random inputs.
//
// Every tensor's values depend only on (suite seed, case id, tensor name,
// generator Version) and the element index: never on worker count, buffer
// size, fill order or other tensors. Everything below is normative for
// Version 1; testdata/gen_ref.py is an independent Python/numpy
// reimplementation of the streams and distributions (§1-§6) written from
// this text, and TestPythonReference checks it bit for bit against the Go
// code. The structured inputs built on top of these streams (paged
// layouts, needles, outliers, Quest planting) are package suite's and are
// specified in docs/spec.md section 10.
//
// # API
//
//	NewStream(seed, caseID, tensor) Stream      stream key (§1)
//	Normal[E](s, dst, at, dt, scale)            scale*N(0,1), rounded once to dt (§3)
//	Uniform[E](s, dst, at, dt, lo, hi)          uniform [lo, hi) (§4)
//	Words(s, dst []uint64, at)                  raw 64-bit words (§4)
//	Ints(s, dst []int32, at, lo, hi)            integers in [lo, hi) (§4)
//	Parallel(workers, at, n, fn)                chunk-aligned split (§2)
//	Stream.Rand() *Rand: Uint64, Float64, IntN, Choice, Perm   sequential draws (§5)
//	Store, Load, Fill                           float64 <-> dtype buffers
//	DrawLens, SlotMapping                       context lengths, slot mappings (§7, §8)
//
// Floating buffers are []uint16 (float16 or bfloat16 bits, chosen by the
// DType argument), []float32 (F32) or []float64 (F64: the value before any
// narrowing). `at` is the absolute index of dst[0] in the tensor's flat
// (row-major) element order; any at >= 0 works, and fills starting at a
// multiple of ChunkElems are the fast case. So a builder can regenerate one
// physical KV block (offset p*BS*Hkv*D, a multiple of ChunkElems whenever
// BS*Hkv*D is a multiple of 256, as for every shape goldset uses, e.g.
// 16*1*64) or stream a large tensor to disk through a reused buffer.
//
// # 1. Stream key
//
// The key is SHA-256 of the concatenation of four fields, each encoded as
// a little-endian uint32 byte length followed by the bytes:
//
//	field 1: the ASCII tag "goldset/gen/v1" (VersionTag)
//	field 2: the seed as 8 bytes, little-endian uint64
//	field 3: the case id, UTF-8
//	field 4: the tensor name, UTF-8
//
// The 32-byte digest is read as four little-endian uint64 words k0..k3
// (Stream.Key). Only k0 and k1 are used by Version 1.
//
// # 2. Chunks and the generator
//
// Elements are cut into chunks of ChunkElems = 256: element i belongs to
// chunk c = i / 256 at position k = i % 256. All arithmetic is modulo 2**64.
//
//	mix64(z):  z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
//	           z = (z ^ z>>27) * 0x94d049bb133111eb
//	           return z ^ z>>31                      (SplitMix64 finalizer)
//	state(c) = mix64(mix64(c ^ k0) + k1)
//
// Each chunk owns a wyrand generator starting at state(c). One step:
//
//	s += 0xa0761d6478bd642f
//	(hi, lo) = 128-bit product s * (s ^ 0xe7037ed1a0b428db)
//	word = hi ^ lo
//
// Word j (j = 1, 2, ...) is the output of the j-th step; skipping j words is
// s += j*0xa0761d6478bd642f. Where 32-bit draws are used, each word gives
// its low half, then its high half. Since values depend only on (key, c,
// k), Parallel may split a range into any chunk-aligned pieces (it uses
// pieces of 64 chunks, aligned to absolute indices) and the output is the
// same for any number of workers or GOMAXPROCS.
//
// # 3. Normal
//
// A 256-layer ziggurat (Marsaglia and Tsang 2000) for f(x) = exp(-x*x/2),
// with numpy's float32 bit split of a 32-bit draw r: layer i = r & 0xff,
// sign = bit 8, magnitude m = r >> 9 (23 bits).
//
// Tables, built in float64 with Exp and Log from internal/detmath (fdlibm
// algorithms, every product rounded separately; math.Sqrt is exact). Here
// R = 3.6541528853610088, V = 4.92867323399e-3, and a*b*c means (a*b)*c:
//
//	dn = R; tn = R; q = V / Exp(-0.5*dn*dn)
//	K[0] = uint32(dn/q * 2**23)   (truncation)
//	K[1] = 0
//	W[0] = q / 2**23;  W[255] = dn / 2**23
//	F[0] = 1;          F[255] = Exp(-0.5*dn*dn)
//	for i = 254 down to 1:
//	    dn = Sqrt(-2 * Log(V/dn + Exp(-0.5*dn*dn)))
//	    K[i+1] = uint32(dn/tn * 2**23); tn = dn
//	    F[i] = Exp(-0.5*dn*dn); W[i] = dn / 2**23
//
// testdata/zig_tables.txt lists the resulting K, W and F (W and F as
// float64 bits); TestZigTablesFile pins it.
//
// Candidate of a draw r: x = float64(m) * W[i], negated when the sign bit
// is set (m = 0 with the sign bit gives -0.0); it is accepted at once when
// m < K[i].
//
// Chunk c yields its 256 standard normals z_0..z_255 as follows. Element k's
// primary draw is the k-th 32-bit draw of the chunk generator (so words
// 1..128 are primary). If its candidate is accepted, z_k is that candidate.
// The rejected elements are then finished one after another in ascending k,
// all taking further 32-bit draws, in order, from the overflow sequence:
// the chunk generator continued at word 129. Finishing element k with
// current draw r (initially its primary draw), layer i, candidate x:
//
//	loop:
//	  if m < K[i]: return x
//	  if i == 0 (tail):
//	      repeat: xx = -Log(u())/R; yy = -Log(u())     (xx drawn first)
//	      until yy + yy > xx*xx
//	      return R + xx, negated if r's sign bit is set
//	  if (F[i-1] - F[i]) * u() + F[i] < Exp(-0.5*x*x): return x   (wedge)
//	  r = next overflow draw; recompute i, m, x; goto loop
//
// where u() = (float64(next overflow draw) + 0.5) * 2**-32, in (0, 1); the
// product (F[i-1]-F[i])*u is rounded before the addition (never fused).
// About 1.2% of elements are rejected at first. Values of elements < n do
// not depend on whether later elements of the chunk are generated.
//
// Speed without new bits: on amd64 with AVX-512, whole chunks of float16
// and bfloat16 output take a vector kernel (16 elements per step, the
// 64x64->128 wyrand product built from 32-bit products, a gather of the
// layer widths, the same float64 products and roundings). The acceptance
// test there is coarse, with no gather: byte permutes look up the top 8
// of zigK's 23 bits, and an element whose m>>15 is not below them (every
// rejected one, plus the ~0.25% that tie) is marked; marked and
// out-of-range elements are finished in Go as above, where m < K[i] is
// tested exactly first, so a tie costs time, never a different draw. The wedge test first compares
// against per-layer linear bounds of exp(-x*x/2) (chord and tangent,
// widened by 1e-9) and evaluates Exp only inside that band (0.4% of wedge
// tests); a comparison decided by the bounds is the one Exp would give.
// TestChunkHalfVecMatchesScalar and TestSqueezeAgreesWithExp check both;
// the pinned vectors and the numpy reference cover the rest. The kernel
// runs where golang.org/x/sys/cpu reports AVX-512F, BW and VBMI: never
// under GODEBUG=cpu.avx512f=off (or cpu.avx512vbmi=off) or in a -tags
// purego build.
//
// Output: element i of Normal(s, dst, at, dt, scale) is z(at+i) * scale
// computed in float64 (one rounding), then rounded once to dt, to nearest
// with ties to even: float32 by Go's float64->float32 conversion,
// float16/bfloat16 exactly as npy.F16FromF64 / npy.BF16FromF64 (overflow
// to +-Inf, subnormals kept; NaN cannot occur). The hot loops use a local
// bit-arithmetic fast path for the normal range of the format and npy's
// converters elsewhere; TestFastHalfMatchesNpy and
// TestNormalHalfMatchesNpy check they agree bit for bit. In numpy:
// np.array(z*scale, np.float64).astype(np.float16) is the same rounding.
//
// # 4. Uniform and integers
//
// Uniform: element k of chunk c uses word k+1 of the chunk generator:
// u = float64(word >> 11) * 2**-53 in [0, 1), v = lo + fl(fl(hi-lo) * u)
// (float64, product rounded before the add), then rounded once to dt as in
// §3. v lies in [lo, hi] (hi only by rounding of the product); the stored
// value in [RNE(lo), RNE(hi)].
//
// Words: element k of chunk c is word k+1 of the chunk generator itself
// (the word Uniform reads), for callers that map raw bits through their
// own tables (package suite's MXFP4 weight codes).
//
// Ints(lo, hi), n = hi - lo <= 2**32: elements of a chunk are drawn in
// order k = 0, 1, ..., each by Lemire's method on successive words of the
// chunk generator: (h, l) = 128-bit product word * n; if l < n, then with
// t = (2**64 - n) mod n, while l < t draw the next word and recompute;
// the value is lo + h. Unbiased.
//
// # 5. Sequential draws
//
// Stream.Rand() is the generator of the reserved chunk index 2**64-1
// (state(2**64 - 1)), for draws that are not one value per element. Its
// Uint64 returns successive words, Float64 = (word >> 11) * 2**-53,
// IntN(n) is Lemire's method as in §4 (values in [0, n)). Choice(n, k)
// is a forward Fisher-Yates: a = [0, 1, ..., n-1]; for i = 0..k-1:
// j = i + IntN(n - i), swap a[i] and a[j]; the result is a[0:k] in that
// order (large n uses a sparse map with identical output). Perm(n) =
// Choice(n, n).
//
// # 6. Rounding helpers
//
// Store rounds float64 values once to a dtype (as in §3); Load converts a
// dtype buffer to float64 exactly; Fill writes one value, NaN as the
// canonical quiet NaN of the dtype (0x7e00, 0x7fc0, 0x7fc00000,
// 0x7ff8000000000000).
//
// # 7. Context lengths
//
// DrawLens(s, B, {Mean, Sigma, Max}) follows the NumPy peer
// (shared/peers/numpy_gen.py draw_context_lens) with goldset's normals:
// z_b = Normal element b of s (F64, scale 1), mu = Log(Mean) -
// (Sigma*Sigma)/2, raw_b = Exp(mu + Sigma*z_b); rescale f = 1, then 20
// times: f *= Mean / (sum_b clip(raw_b*f, 1, Max) / B), the sum taken
// sequentially in b order; L_b = clip(RoundToEven(raw_b*f), 1, Max). Exp and
// Log are detmath's. Errors (ErrSpec): B < 1, Max < 1, Mean outside
// [1, Max], Sigma negative, NaN or infinite.
//
// # 8. Slot mappings
//
// SlotMapping(s, {Tokens T, NumSlots N, NegFrac f, AllNeg, ForceSlot0}):
// nNeg = floor(f*T + 0.5) (T when AllNeg), nValid = T - nNeg <= N (else
// ErrSpec). With r = s.Rand(): valid = r.Choice(N, nValid); with
// ForceSlot0 and 0 not drawn, valid[nValid-1] = 0; then neg = r.Choice(T,
// nNeg), token neg[j] gets NegSlots[j % 3] = (-1, -7, MinInt32)[j % 3]; the
// other tokens, ascending, get valid[0], valid[1], ... Valid slots are
// unique and in [0, N).
//
// # Structured inputs live in package suite
//
// Paged layouts (block tables, shared and poison blocks), NaN sentinels,
// needles, softmax outlier rows and Quest planting are built by package
// suite from the primitives above; their normative description, with every
// stream name and formula a reimplementer needs to get a bundle's bytes,
// is section 10 of docs/spec.md, and testdata/gen_ref.py reimplements them
// too (TestStructuredInputsReference compares its bytes with a bundle's).
//
// # Speed
//
// Normal fills are branch-light: per pair of elements one wyrand word, two
// table lookups, conversions and multiplies; the rare rejected elements are
// finished after the chunk's loop. fp16/bf16 outputs are then rounded with
// integer arithmetic on the float64 bits (npy's converter only for zero,
// subnormal or overflowing values). Measured on the 16-core Xeon device
// host: ~210-220 M fp16 values/s per core (the ziggurat alone ~315 M/s),
// numpy default_rng().standard_normal ~65-90 M/s (float32) there. See
// BenchmarkNormalF16/BF16/F32 (b.SetBytes = bytes per output value).
package gen
