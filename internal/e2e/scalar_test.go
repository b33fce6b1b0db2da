package e2e

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goldset/goldset/manifests"
)

// scalarGODEBUG turns off, in golang.org/x/sys/cpu, the features that
// select goldset's amd64 kernels (AVX-512F for matmul, attention and the
// fused half generator; AVX2 for the F16C widening and Quest's min/max).
const scalarGODEBUG = "GODEBUG=cpu.avx512f=off,cpu.avx2=off"

// kernelSymbols are the assembly kernels of a default amd64 build; a
// purego build has none of them.
var kernelSymbols = []string{
	"golden.matmulTile4x16", "golden.matmulTile4x16FMA", "golden.dsaE4M3CodesAVX512", "golden.dsaHeadSumsAVX512", "golden.attnQKF32", "golden.attnPVBF16", "golden.orderedMinMaxAVX2",
	"gen.chunkHalfAVX512", "npy.f16sToF32sF16C", "npy.bf16sToF32sAVX2",
}

// TestScalarPathsIdentity generates the cross-architecture test's
// op-complete selection three ways on one amd64 host: the default build
// (assembly kernels where the CPU has them), the default build with
// scalarGODEBUG, and a -tags purego build (no assembly linked) with
// scalarGODEBUG. The manifest digests and every file's sha256 but
// manifest.json's must be identical: the Go twins of the kernels give the
// assembly's bits end to end.
func TestScalarPathsIdentity(t *testing.T) {
	if testing.Short() {
		t.Skip("builds goldset twice and generates a selection three times; skipped with -short")
	}
	if runtime.GOARCH != "amd64" || runtime.GOOS != "linux" {
		t.Skipf("the assembly kernels are amd64 only; on %s/%s every build runs the Go twins", runtime.GOOS, runtime.GOARCH)
	}
	sels := []selection{smallSelection(t, "stage1-basic", 2<<20), smallSelection(t, "stage2-paged", 24<<20), smallSelection(t, "stage4-mixed", 8<<20), smallSelection(t, "stage5-dsa", 4<<20), smallSelection(t, "stage6-mxfp4", 4<<20)}
	requireOpComplete(t, sels)

	asm := buildGoldset(t, "amd64", "")
	pure := buildGoldsetTags(t, "amd64", "", "purego")
	requireSymbols(t, asm, true)
	requireSymbols(t, pure, false)
	if flags := cpuProbe(t, nil); !strings.Contains(flags, "avx512f=true") || !strings.Contains(flags, "avx2=true") {
		t.Logf("this CPU (%s) lacks AVX-512F or AVX2: the default build runs some Go twins too", flags)
	}
	if flags := cpuProbe(t, []string{scalarGODEBUG}); !strings.Contains(flags, "avx2=false") || !strings.Contains(flags, "avx512f=false") {
		t.Fatalf("with %s golang.org/x/sys/cpu still reports %s", scalarGODEBUG, flags)
	}

	variants := []goldset{
		{name: "default", path: asm},
		{name: "default+GODEBUG", path: asm, env: []string{scalarGODEBUG}},
		{name: "purego+GODEBUG", path: pure, env: []string{scalarGODEBUG}},
	}
	type bundle struct {
		digest string
		files  map[string]string
	}
	base := t.TempDir()
	got := make([]map[string]bundle, len(variants))
	for vi, v := range variants {
		got[vi] = map[string]bundle{}
		out := filepath.Join(base, strings.ReplaceAll(v.name, "+", "-"))
		for _, s := range sels {
			start := time.Now()
			r := mustRun(t, v, 5*time.Minute, s.genArgs(out, "--jobs", "2")...)
			if strings.Contains(r.stderr, "GODEBUG") {
				t.Errorf("%s: the runtime complained about %s:\n%s", v.name, scalarGODEBUG, r.stderr)
			}
			el := time.Since(start)
			dir := filepath.Join(out, s.suite)
			mustRun(t, v, 5*time.Minute, "verify", dir)
			files := treeHashes(t, dir)
			delete(files, "manifest.json") // provenance: time, host, build
			got[vi][s.suite] = bundle{readManifest(t, dir).Digest, files}
			t.Logf("%-15s %-12s digest %s (%d files, %.1fs)", v.name, s.suite, got[vi][s.suite].digest, len(files), el.Seconds())
		}
	}
	for vi, v := range variants[1:] {
		for _, s := range sels {
			ref, b := got[0][s.suite], got[vi+1][s.suite]
			if b.digest != ref.digest {
				t.Errorf("%s: digest %s with %s, %s with %s", s.suite, b.digest, v.name, ref.digest, variants[0].name)
			}
			if len(b.files) != len(ref.files) {
				t.Errorf("%s: %d files with %s, %d with %s", s.suite, len(b.files), v.name, len(ref.files), variants[0].name)
			}
			for p, h := range ref.files {
				if b.files[p] != h {
					t.Errorf("%s: %s has sha256 %s with %s, %s with %s", s.suite, p, b.files[p], v.name, h, variants[0].name)
				}
			}
		}
	}
}

// requireOpComplete fails t unless the selections cover every op that
// the suites' public and benchmark cases use (read from the recipes, so
// that a new op joins without editing this test).
func requireOpComplete(t *testing.T, sels []selection) {
	t.Helper()
	for _, s := range sels {
		r, err := manifests.LookupSuite(s.suite)
		if err != nil {
			t.Fatal(err)
		}
		have := opsOf(t, s)
		for _, c := range r.Cases {
			if c.Split != manifests.SplitHidden && !have[c.Op] {
				t.Fatalf("selection of %s misses op %s (case %s)", s.suite, c.Op, c.ID)
			}
		}
		ops := make([]string, 0, len(have))
		for op := range have {
			ops = append(ops, op)
		}
		slices.Sort(ops)
		t.Logf("selection %s (ops %s): %s", s.suite, strings.Join(ops, " "), strings.Join(s.cases, " "))
	}
}

// requireSymbols checks that the binary links every kernel (want) or none.
func requireSymbols(t *testing.T, bin string, want bool) {
	t.Helper()
	out, err := exec.Command(goTool(t), "tool", "nm", bin).Output()
	if err != nil {
		t.Fatalf("go tool nm %s: %v", bin, err)
	}
	for _, sym := range kernelSymbols {
		if has := strings.Contains(string(out), " github.com/goldset/goldset/"+sym+".abi0\n"); has != want {
			t.Errorf("%s: kernel %s linked: %v, want %v", filepath.Base(bin), sym, has, want)
		}
	}
}

// cpuProbe builds testdata/cpuprobe once and returns what it prints with
// env added.
func cpuProbe(t *testing.T, env []string) string {
	t.Helper()
	bin := filepath.Join(binDir, "cpuprobe")
	if !fileExists(bin) {
		cmd := exec.Command(goTool(t), "build", "-o", bin, "./internal/e2e/testdata/cpuprobe")
		cmd.Dir = repoRoot(t)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build cpuprobe: %v\n%s", err, b)
		}
	}
	cmd := exec.Command(bin)
	cmd.Env = append(runEnv(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cpuprobe: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}
