package judge

import (
	"fmt"
	"slices"
	"strings"
)

// Profile is a device's peak rates: HBM bandwidth and dense (no 2:4
// sparsity) FLOP/s per operand dtype, each from the cited source.
type Profile struct {
	Name string `json:"name"`
	// Device is the vendor's product name.
	Device string `json:"device"`
	// BytesPerSec is the peak memory bandwidth.
	BytesPerSec float64 `json:"bytes_per_sec"`
	// FlopsPerSec is the dense peak per operand dtype (goldset dtype
	// names; "tf32" for the float32 tensor-core path).
	FlopsPerSec map[string]float64 `json:"flops_per_sec"`
	// Slack divides the floor (1 for datasheet figures): where sources
	// disagree, the floor is taken low so that it never rejects a time the
	// hardware can reach.
	Slack float64 `json:"slack"`
	// Source cites where the numbers come from.
	Source string `json:"source"`
}

// Profiles is the table of device profiles, by name.
//
// H200 and B200: NVIDIA's datasheets list tensor-core rates "with
// sparsity"; the dense rates here are half of those. The H200 page
// (https://www.nvidia.com/en-us/data-center/h200/, "NVIDIA H200 Tensor
// Core GPU") gives 4.8 TB/s HBM3e, FP64 tensor 67 TF, FP32 67 TF, TF32
// 989 TF*, BF16/FP16 1,979 TF*, FP8 3,958 TF* (* with sparsity); H200 has
// no FP4 tensor cores. The B200 figures are the HGX B200 (1,000 W) rates
// of NVIDIA's DGX/HGX B200 pages (https://www.nvidia.com/en-us/data-center/dgx-b200/:
// 72 PF dense FP4 and 64 TB/s for eight GPUs) as tabulated per GPU at
// https://glennklockwood.com/garden/processors/B200: 8 TB/s, FP32 80 TF,
// TF32 1.1 PF, BF16/FP16 2.25 PF, FP8 4.5 PF, FP4 9 PF dense.
//
// Ascend 910B: Huawei publishes no per-chip datasheet; third-party pages
// disagree (FP16 256-320 TFLOPS, memory 0.4-1.2 TB/s:
// https://boardor.com/blog/huawei-ascend-910b-outperforms-h20-910c-approaches-h100,
// https://jishuzhan.net/article/1872432607539499010). The table takes the
// highest (320 TF FP16/BF16, 640 TOPS INT8, 1.2 TB/s) and a slack of 1.5,
// so the floor is that of a 480 TF, 1.8 TB/s part: a time below it is
// impossible on any 910B variant the sources describe; peak_fraction
// against these numbers is approximate.
var Profiles = []Profile{
	{Name: "h200", Device: "NVIDIA H200 SXM (141 GB HBM3e)", BytesPerSec: 4.8e12, Slack: 1,
		FlopsPerSec: map[string]float64{"float64": 67e12, "float32": 67e12, "tf32": 494.5e12, "float16": 989.5e12, "bfloat16": 989.5e12,
			"float8_e4m3fn": 1979e12, "int8": 1979e12},
		Source: "https://www.nvidia.com/en-us/data-center/h200/ (NVIDIA H200 Tensor Core GPU; dense = half the sparsity figures)"},
	{Name: "b200", Device: "NVIDIA B200 (HGX, 1000 W, HBM3e)", BytesPerSec: 8e12, Slack: 1,
		FlopsPerSec: map[string]float64{"float64": 40e12, "float32": 80e12, "tf32": 1100e12, "float16": 2250e12, "bfloat16": 2250e12,
			"float8_e4m3fn": 4500e12, "int8": 4500e12, "float4_e2m1fn_x2": 9000e12},
		Source: "https://www.nvidia.com/en-us/data-center/dgx-b200/ (DGX B200: 72 PF dense FP4, 64 TB/s per 8 GPUs); per-GPU HGX table https://glennklockwood.com/garden/processors/B200"},
	{Name: "ascend910b", Device: "Huawei Ascend 910B", BytesPerSec: 1.2e12, Slack: 1.5,
		FlopsPerSec: map[string]float64{"float16": 320e12, "bfloat16": 320e12, "int8": 640e12},
		Source:      "no vendor datasheet; https://boardor.com/blog/huawei-ascend-910b-outperforms-h20-910c-approaches-h100 (FP16 ~320 TF), https://jishuzhan.net/article/1872432607539499010, highest figures taken, slack 1.5"},
}

// LookupProfile returns the profile called name.
func LookupProfile(name string) (Profile, error) {
	i := slices.IndexFunc(Profiles, func(p Profile) bool { return p.Name == name })
	if i < 0 {
		var names []string
		for _, p := range Profiles {
			names = append(names, p.Name)
		}
		return Profile{}, fmt.Errorf("%w %q (known: %s)", ErrProfile, name, strings.Join(names, ", "))
	}
	return Profiles[i], nil
}

// Peak is the profile's dense rate for products in dtype, and whether the
// table lists it (peak_fraction is reported only then).
func (p Profile) Peak(dtype string) (float64, bool) {
	v, ok := p.FlopsPerSec[dtype]
	return v, ok
}

// floorPeak is the rate the time floor assumes for dtype: the dtype's own
// peak or a faster path that computes it (float32 on TF32 tensor cores),
// and, for a dtype the table lacks, the fastest rate it lists; so the
// floor is never above what the device can do.
func (p Profile) floorPeak(dtype string) float64 {
	v, ok := p.FlopsPerSec[dtype]
	if !ok {
		for _, r := range p.FlopsPerSec {
			v = max(v, r)
		}
		return v
	}
	if dtype == "float32" {
		v = max(v, p.FlopsPerSec["tf32"])
	}
	return v
}

// Floor returns the least time in seconds a kernel can take for the
// given work on p: max(bytes / bandwidth, flops / peak) / slack.
func (p Profile) Floor(bytes, flops int64, dtype string) float64 {
	t := float64(bytes) / p.BytesPerSec
	if flops > 0 {
		if pk := p.floorPeak(dtype); pk > 0 {
			t = max(t, float64(flops)/pk)
		}
	}
	return t / max(p.Slack, 1)
}
