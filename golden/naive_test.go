package golden_test

// A deliberately naive second implementation: straightforward loops in the
// plainest order, gather-then-attend, no blocking, no parallelism. The
// kernels are compared with it on random cases.

import (
	"math"
	"sort"

	"github.com/goldset/goldset/golden"
)

func naiveMatmul(a, b []float32, m, k, n int, bNK bool) []float64 {
	c := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			s := 0.0
			for p := 0; p < k; p++ {
				bv := b[p*n+j]
				if bNK {
					bv = b[j*k+p]
				}
				s += float64(float64(a[i*k+p]) * float64(bv))
			}
			c[i*n+j] = s
		}
	}
	return c
}

// naiveSoftmax is the two-pass textbook softmax with math.Exp (not
// detmath: a different exp implementation on purpose).
func naiveSoftmax(x []float32, m, n int) (y, rowMax, rowSum []float64) {
	y = make([]float64, m*n)
	rowMax = make([]float64, m)
	rowSum = make([]float64, m)
	for i := 0; i < m; i++ {
		mx := math.Inf(-1)
		for j := 0; j < n; j++ {
			mx = math.Max(mx, float64(x[i*n+j]))
		}
		rowMax[i] = mx
		if math.IsInf(mx, -1) {
			continue
		}
		s := 0.0
		for j := 0; j < n; j++ {
			s += math.Exp(float64(x[i*n+j]) - mx)
		}
		rowSum[i] = s
		for j := 0; j < n; j++ {
			y[i*n+j] = math.Exp(float64(x[i*n+j])-mx) / s
		}
	}
	return
}

func naiveReshapeAndCache(key, value, kc, vc []float32, slots []int32, d golden.CacheDims) ([]float32, []float32) {
	k2 := append([]float32(nil), kc...)
	v2 := append([]float32(nil), vc...)
	row := d.Hkv * d.D
	for t, s := range slots {
		if s < 0 {
			continue
		}
		for e := 0; e < row; e++ {
			k2[int(s)*row+e] = key[t*row+e]
			v2[int(s)*row+e] = value[t*row+e]
		}
	}
	return k2, v2
}

// gather returns the K (or V) rows of sequence b, KV head kvh, for the
// logical blocks given, valid tokens only, in block then slot order.
func gather(cache []float32, bt, cl []int32, dm golden.AttentionDims, b, kvh int, blocks []int) [][]float64 {
	l := int(cl[b])
	var rows [][]float64
	for _, i := range blocks {
		for off := 0; off < dm.BS; off++ {
			j := i*dm.BS + off
			if j >= l {
				break
			}
			p := int(bt[b*dm.MAXB+i])
			r := make([]float64, dm.D)
			for e := range r {
				r[e] = float64(cache[((p*dm.BS+off)*dm.Hkv+kvh)*dm.D+e])
			}
			rows = append(rows, r)
		}
	}
	return rows
}

func naiveAttendRows(q []float64, ks, vs [][]float64, scale float64) (out []float64, lse float64) {
	s := make([]float64, len(ks))
	mx := math.Inf(-1)
	for j, k := range ks {
		dot := 0.0
		for e := range q {
			dot += float64(q[e] * k[e])
		}
		s[j] = scale * dot
		mx = math.Max(mx, s[j])
	}
	den := 0.0
	for j := range s {
		s[j] = math.Exp(s[j] - mx)
		den += s[j]
	}
	out = make([]float64, len(q))
	for j, v := range vs {
		for e := range out {
			out[e] += float64(s[j] / den * v[e])
		}
	}
	return out, mx + math.Log(den)
}

func naiveQ(q []float32, dm golden.AttentionDims, b, h int) []float64 {
	r := make([]float64, dm.D)
	for e := range r {
		r[e] = float64(q[(b*dm.Hq+h)*dm.D+e])
	}
	return r
}

func naivePaged(q, kc, vc []float32, bt, cl []int32, dm golden.AttentionDims, scale float64) (out, lse []float64) {
	out = make([]float64, dm.B*dm.Hq*dm.D)
	lse = make([]float64, dm.B*dm.Hq)
	g := dm.Hq / dm.Hkv
	for b := 0; b < dm.B; b++ {
		var blocks []int
		for i := 0; i*dm.BS < int(cl[b]); i++ {
			blocks = append(blocks, i)
		}
		for h := 0; h < dm.Hq; h++ {
			o, l := naiveAttendRows(naiveQ(q, dm, b, h), gather(kc, bt, cl, dm, b, h/g, blocks), gather(vc, bt, cl, dm, b, h/g, blocks), scale)
			copy(out[(b*dm.Hq+h)*dm.D:], o)
			lse[b*dm.Hq+h] = l
		}
	}
	return
}

func naiveSparse(q, kc, vc []float32, bt, cl, sel []int32, dm golden.AttentionDims, p golden.QuestParams, scale float64) (out, lse []float64) {
	out = make([]float64, dm.B*dm.Hq*dm.D)
	lse = make([]float64, dm.B*dm.Hq)
	g := dm.Hq / dm.Hkv
	hsel := p.Granularity.Hsel(dm)
	for b := 0; b < dm.B; b++ {
		for h := 0; h < dm.Hq; h++ {
			r := h
			if p.Granularity == golden.KVGroupSum {
				r = h / g
			}
			var blocks []int
			for _, i := range sel[(b*hsel+r)*p.K : (b*hsel+r+1)*p.K] {
				if i >= 0 {
					blocks = append(blocks, int(i))
				}
			}
			o, l := naiveAttendRows(naiveQ(q, dm, b, h), gather(kc, bt, cl, dm, b, h/g, blocks), gather(vc, bt, cl, dm, b, h/g, blocks), scale)
			copy(out[(b*dm.Hq+h)*dm.D:], o)
			lse[b*dm.Hq+h] = l
		}
	}
	return
}

func naiveMeta(kc []float32, bt, cl []int32, dm golden.AttentionDims) (kmax, kmin []float64) {
	kmax = make([]float64, dm.B*dm.MAXB*dm.Hkv*dm.D)
	kmin = make([]float64, len(kmax))
	for b := 0; b < dm.B; b++ {
		for i := 0; i*dm.BS < int(cl[b]); i++ {
			for kvh := 0; kvh < dm.Hkv; kvh++ {
				rows := gather(kc, bt, cl, dm, b, kvh, []int{i})
				for e := 0; e < dm.D; e++ {
					mx, mn := math.Inf(-1), math.Inf(1)
					for _, r := range rows {
						mx = math.Max(mx, r[e])
						mn = math.Min(mn, r[e])
					}
					kmax[((b*dm.MAXB+i)*dm.Hkv+kvh)*dm.D+e] = mx
					kmin[((b*dm.MAXB+i)*dm.Hkv+kvh)*dm.D+e] = mn
				}
			}
		}
	}
	return
}

func naiveScores(q []float32, kmax, kmin []float64, cl []int32, dm golden.AttentionDims, gran golden.Granularity) []float64 {
	g := dm.Hq / dm.Hkv
	hsel := gran.Hsel(dm)
	sc := make([]float64, dm.B*hsel*dm.MAXB)
	for i := range sc {
		sc[i] = math.Inf(-1)
	}
	for b := 0; b < dm.B; b++ {
		nb := (int(cl[b]) + dm.BS - 1) / dm.BS
		for r := 0; r < hsel; r++ {
			heads := []int{r}
			if gran == golden.KVGroupSum {
				heads = nil
				for h := r * g; h < (r+1)*g; h++ {
					heads = append(heads, h)
				}
			}
			for i := 0; i < nb; i++ {
				total := 0.0
				for _, h := range heads {
					s := 0.0
					for e := 0; e < dm.D; e++ {
						qv := float64(q[(b*dm.Hq+h)*dm.D+e])
						o := ((b*dm.MAXB+i)*dm.Hkv+h/g)*dm.D + e
						s += math.Max(float64(qv*kmax[o]), float64(qv*kmin[o]))
					}
					total += s
				}
				sc[(b*hsel+r)*dm.MAXB+i] = total
			}
		}
	}
	return sc
}

// naiveSelect ranks every block with anchors first (infinite priority),
// then score descending, index ascending, keeps K and sorts them.
func naiveSelect(sc []float64, cl []int32, dm golden.AttentionDims, p golden.QuestParams) []int32 {
	hsel := p.Granularity.Hsel(dm)
	sel := make([]int32, dm.B*hsel*p.K)
	for i := range sel {
		sel[i] = -1
	}
	for b := 0; b < dm.B; b++ {
		nb := (int(cl[b]) + dm.BS - 1) / dm.BS
		for r := 0; r < hsel; r++ {
			idx := make([]int, nb)
			for i := range idx {
				idx[i] = i
			}
			key := func(i int) float64 {
				if (p.AnchorFirst && i == 0) || (p.AnchorLast && i == nb-1) {
					return math.Inf(1)
				}
				return sc[(b*hsel+r)*dm.MAXB+i]
			}
			sort.SliceStable(idx, func(x, y int) bool { return key(idx[x]) > key(idx[y]) })
			if len(idx) > p.K {
				idx = idx[:p.K]
			}
			sort.Ints(idx)
			for j, i := range idx {
				sel[(b*hsel+r)*p.K+j] = int32(i)
			}
		}
	}
	return sel
}
