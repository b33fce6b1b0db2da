package gen

import (
	"errors"
	"fmt"
	"math"

	"github.com/goldset/goldset/internal/detmath"
)

// ErrSpec is wrapped by every error of DrawLens and SlotMapping: an
// impossible or inconsistent spec.
var ErrSpec = errors.New("invalid generator spec")

// LenDraw is the peer's lognormal context-length draw (numpy_gen.py
// draw_context_lens): raw_b = exp(mu + sigma*z_b), mu = log(mean) -
// sigma**2/2, then 20 fixed-point steps rescale *= mean /
// mean(clip(raw*rescale, 1, max)), and L_b = clip(rint(raw_b*rescale), 1,
// max). z_b is element b of the context-lens stream's normal sequence.
type LenDraw struct {
	Mean, Sigma float64
	Max         int
}

// DrawLens draws B context lengths as described at LenDraw from the normal
// sequence of s. It returns the lengths and the rescale factor.
func DrawLens(s Stream, b int, d LenDraw) ([]int32, float64, error) {
	if b < 1 || d.Max < 1 || !(d.Mean >= 1 && d.Mean <= float64(d.Max)) || !(d.Sigma >= 0) || math.IsInf(d.Sigma, 0) {
		return nil, 0, fmt.Errorf("gen: lognormal draw B=%d mean=%v sigma=%v max=%d: %w", b, d.Mean, d.Sigma, d.Max, ErrSpec)
	}
	z := make([]float64, b)
	Normal(s, z, 0, F64, 1)
	mu := detmath.Log(d.Mean) - float64(float64(d.Sigma*d.Sigma)/2) // /2 becomes *0.5, which may fuse too
	raw := make([]float64, b)
	for i, v := range z {
		raw[i] = detmath.Exp(mu + float64(d.Sigma*v))
	}
	maxf := float64(d.Max)
	f := 1.0
	for range 20 {
		sum := 0.0
		for _, v := range raw {
			sum += min(max(float64(v*f), 1), maxf)
		}
		f *= d.Mean / (sum / float64(b))
	}
	lens := make([]int32, b)
	for i, v := range raw {
		lens[i] = int32(min(max(math.RoundToEven(float64(v*f)), 1), maxf))
	}
	return lens, f, nil
}

// SlotSpec describes a reshape_and_cache slot mapping.
type SlotSpec struct {
	Tokens   int     // T_s
	NumSlots int     // NB*BS
	NegFrac  float64 // share of negative entries: n = floor(NegFrac*T_s + 0.5)
	AllNeg   bool    // every entry negative
	// ForceSlot0 makes slot 0 one of the valid slots when there is at
	// least one (it replaces the last valid slot drawn if 0 was not drawn).
	ForceSlot0 bool
}

// NegSlots are the negative values used, cyclically, for skipped tokens.
var NegSlots = [3]int32{-1, -7, math.MinInt32}

// SlotMapping draws a slot mapping from the sequential generator of s:
// first Choice(NumSlots, nValid) (the valid slots, in draw order), then
// Choice(T_s, nNeg) (the negative positions; the k-th drawn gets
// NegSlots[k%3]); the valid slots fill the other positions in ascending
// order.
func SlotMapping(s Stream, spec SlotSpec) ([]int32, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("gen: slot mapping: "+format+": %w", append(a, ErrSpec)...)
	}
	if spec.Tokens < 0 || spec.NumSlots < 1 || spec.NumSlots > math.MaxInt32 || !(spec.NegFrac >= 0 && spec.NegFrac <= 1) {
		return nil, bad("T_s=%d slots=%d negative fraction %v", spec.Tokens, spec.NumSlots, spec.NegFrac)
	}
	nNeg := int(math.Floor(float64(spec.NegFrac*float64(spec.Tokens)) + 0.5))
	if spec.AllNeg {
		nNeg = spec.Tokens
	}
	nValid := spec.Tokens - nNeg
	if nValid > spec.NumSlots {
		return nil, bad("%d valid tokens but only %d slots", nValid, spec.NumSlots)
	}
	r := s.Rand()
	valid := r.Choice(spec.NumSlots, nValid)
	if spec.ForceSlot0 && nValid > 0 {
		has0 := false
		for _, v := range valid {
			has0 = has0 || v == 0
		}
		if !has0 {
			valid[nValid-1] = 0
		}
	}
	out := make([]int32, spec.Tokens)
	isNeg := make([]bool, spec.Tokens)
	for k, t := range r.Choice(spec.Tokens, nNeg) {
		out[t] = NegSlots[k%3]
		isNeg[t] = true
	}
	k := 0
	for t := range out {
		if !isNeg[t] {
			out[t] = int32(valid[k])
			k++
		}
	}
	return out, nil
}
