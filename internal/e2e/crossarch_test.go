package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cpuHasFlags reports whether /proc/cpuinfo lists every flag.
func cpuHasFlags(flags ...string) bool {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) != "flags" {
			continue
		}
		have := strings.Fields(v)
		for _, f := range flags {
			if !slices.Contains(have, f) {
				return false
			}
		}
		return true
	}
	return false
}

// findQemu returns the qemu user-mode emulator for arch ("aarch64",
// "x86_64"), or "".
func findQemu(arch string) string {
	for _, name := range []string{"qemu-" + arch + "-static", "qemu-" + arch} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// crossVariants returns the binaries to compare: on amd64 GOAMD64=v1, v3
// (when the CPU has AVX2 and FMA) and arm64 under qemu; on arm64 the
// native build and amd64 v1 under qemu. missing says what could not run.
func crossVariants(t *testing.T) (vs []goldset, missing []string) {
	switch runtime.GOARCH {
	case "amd64":
		vs = append(vs, goldset{name: "amd64-v1", path: buildGoldset(t, "amd64", "v1")})
		if cpuHasFlags("avx2", "fma") {
			vs = append(vs, goldset{name: "amd64-v3", path: buildGoldset(t, "amd64", "v3")})
		} else {
			t.Log("amd64-v3 skipped: this CPU lacks avx2 or fma, which GOAMD64=v3 binaries need")
		}
		if q := findQemu("aarch64"); q != "" {
			vs = append(vs, goldset{name: "arm64-qemu", path: buildGoldset(t, "arm64", ""), prefix: []string{q}})
		} else {
			missing = append(missing, "arm64: qemu-aarch64-static or qemu-aarch64 not found (Debian package qemu-user-static)")
		}
	case "arm64":
		vs = append(vs, goldset{name: "arm64", path: buildGoldset(t, "arm64", "")})
		if q := findQemu("x86_64"); q != "" {
			vs = append(vs, goldset{name: "amd64-v1-qemu", path: buildGoldset(t, "amd64", "v1"), prefix: []string{q}})
		} else {
			missing = append(missing, "amd64: qemu-x86_64-static or qemu-x86_64 not found (Debian package qemu-user-static)")
		}
	default:
		t.Skipf("cross-architecture identity runs on amd64 or arm64 hosts, not %s", runtime.GOARCH)
	}
	return vs, missing
}

// TestCrossArchIdentity builds the real CLI for several targets, generates
// the same op-complete selection with each (at different --jobs) and
// requires identical manifest digests and identical bytes in every file
// but manifest.json (whose provenance names the architecture).
func TestCrossArchIdentity(t *testing.T) {
	if testing.Short() {
		t.Skip("builds goldset for three targets and runs one under qemu; skipped with -short")
	}
	sels := []selection{smallSelection(t, "stage1-basic", 2<<20), smallSelection(t, "stage2-paged", 24<<20), smallSelection(t, "stage4-mixed", 8<<20), smallSelection(t, "stage5-dsa", 4<<20), smallSelection(t, "stage6-mxfp4", 4<<20)}
	ops := map[string]bool{}
	for _, s := range sels {
		for op := range opsOf(t, s) {
			ops[op] = true
		}
		t.Logf("selection %s: %s", s.suite, strings.Join(s.cases, " "))
	}

	variants, missing := crossVariants(t)
	if len(missing) > 0 && requireTools() {
		t.Fatalf("%s (GOLDSET_REQUIRE_TOOLS=1)", strings.Join(missing, "; "))
	}
	// Every op goldset builds (its own list, not a copy here) is covered.
	for _, op := range listOps(t, variants[0]) {
		if !ops[op] {
			t.Fatalf("the selection does not cover op %s", op)
		}
	}
	base := t.TempDir()
	type bundle struct {
		digest string
		files  map[string]string
	}
	got := map[string]map[string]bundle{} // suite -> variant -> bundle
	for vi, v := range variants {
		out := filepath.Join(base, v.name)
		jobs := strconv.Itoa(vi%3 + 1)
		for _, s := range sels {
			start := time.Now()
			mustRun(t, v, 5*time.Minute, s.genArgs(out, "--jobs", jobs)...)
			el := time.Since(start)
			dir := filepath.Join(out, s.suite)
			mustRun(t, v, 5*time.Minute, "verify", dir)
			m := readManifest(t, dir)
			want := "amd64"
			if strings.HasPrefix(v.name, "arm64") {
				want = "arm64"
			}
			if m.Provenance == nil || m.Provenance.GOARCH != want {
				t.Errorf("%s: provenance %+v, want goarch %s", v.name, m.Provenance, want)
			}
			files := treeHashes(t, dir)
			delete(files, "manifest.json")
			if got[s.suite] == nil {
				got[s.suite] = map[string]bundle{}
			}
			got[s.suite][v.name] = bundle{m.Digest, files}
			t.Logf("%-10s %-13s --jobs %s: digest %s (%d files, %.1fs)", v.name, s.suite, jobs, m.Digest, len(files), el.Seconds())
		}
	}
	for _, s := range sels {
		ref := variants[0].name
		rb := got[s.suite][ref]
		for _, v := range variants[1:] {
			b := got[s.suite][v.name]
			if b.digest != rb.digest {
				t.Errorf("%s: digest %s on %s, %s on %s", s.suite, b.digest, v.name, rb.digest, ref)
			}
			if len(b.files) != len(rb.files) {
				t.Errorf("%s: %d files on %s, %d on %s", s.suite, len(b.files), v.name, len(rb.files), ref)
			}
			for p, h := range rb.files {
				if b.files[p] != h {
					t.Errorf("%s: %s has sha256 %s on %s, %s on %s", s.suite, p, b.files[p], v.name, h, ref)
				}
			}
		}
	}
	if len(missing) > 0 {
		t.Skipf("compared %d builds; not checked: %s", len(variants), strings.Join(missing, "; "))
	}
}

// TestPinnedTestsUnderQEMU cross-compiles the deterministic packages'
// pinned-vector tests for arm64, runs them under qemu from their package
// directories (so testdata resolves) and runs the same tests natively:
// detmath's pinned bits, gen's regression vectors and ziggurat tables,
// suite's pinned digests of its op-complete tiny suites and of the DSA
// build's long-sequence paths. The two runs must
// report the same results with the same messages (a stale pin fails
// both alike and is the package's own test failure; a difference is an
// architecture dependence), and the arm64 run must pass wherever the
// native one does.
func TestPinnedTestsUnderQEMU(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles three test binaries and runs them under qemu; skipped with -short")
	}
	if runtime.GOARCH != "amd64" {
		t.Skipf("runs arm64 test binaries under qemu from an amd64 host, not %s", runtime.GOARCH)
	}
	q := findQemu("aarch64")
	if q == "" {
		skipOrFail(t, "qemu-aarch64-static or qemu-aarch64 not found (Debian package qemu-user-static)")
	}
	root := repoRoot(t)
	for _, p := range []struct {
		pkg  string
		run  string
		must []string
	}{
		{"internal/detmath", "^(TestPinnedBits|TestSpecialValues|TestExpAgainstMath|TestLogAgainstMath)$", []string{"TestPinnedBits"}},
		{"gen", "^(TestKeyDerivation|TestRegressionVectors|TestZigTablesFile|TestFastHalfMatchesNpy|TestOffsetIndependence|TestParallelWorkers|TestSlotMapping)$", []string{"TestRegressionVectors", "TestZigTablesFile"}},
		{"suite", "^(TestDeterministicAcrossWorkers|TestDeterministicAcrossWorkersMX|TestDSADeterministic|TestDSALongDeterministic)$", []string{"TestDeterministicAcrossWorkers", "TestDeterministicAcrossWorkersMX", "TestDSADeterministic", "TestDSALongDeterministic"}},
	} {
		t.Run(strings.ReplaceAll(p.pkg, "/", "_"), func(t *testing.T) {
			dir := filepath.Join(root, filepath.FromSlash(p.pkg))
			args := []string{"-test.run", p.run, "-test.v", "-test.short", "-test.count=1"}
			native := pkgTestRun(t, root, dir, p.pkg, runtime.GOARCH, nil, args)
			arm := pkgTestRun(t, root, dir, p.pkg, "arm64", []string{q}, args)
			if native.out != arm.out {
				t.Errorf("./%s: arm64 (qemu) and native %s test runs differ\narm64:\n%s\nnative:\n%s", p.pkg, runtime.GOARCH, arm.out, native.out)
			}
			for _, name := range p.must {
				status := "--- PASS: " + name + " "
				switch {
				case !strings.Contains(native.out, status):
					t.Logf("./%s: %s does not pass natively either (its own failure, not an architecture difference):\n%s", p.pkg, name, native.out)
				case !strings.Contains(arm.out, status):
					t.Errorf("./%s: %s passes natively but not on arm64 under qemu:\n%s", p.pkg, name, arm.out)
				}
			}
			t.Logf("./%s: %d tests passed on arm64 under qemu (exit %d, %.1fs), %d natively (exit %d)", p.pkg,
				strings.Count(arm.out, "--- PASS: "), arm.code, arm.secs, strings.Count(native.out, "--- PASS: "), native.code)
		})
	}
}

// testRun is a package test binary's normalised verbose output.
type testRun struct {
	out  string
	code int
	secs float64
}

var durations = regexp.MustCompile(`\(\d+\.\d+s\)|\t\d+\.\d+s`)

// pkgTestRun compiles ./pkg's tests for goarch and runs them from dir
// (under prefix, an emulator, when set).
func pkgTestRun(t *testing.T, root, dir, pkg, goarch string, prefix, args []string) testRun {
	t.Helper()
	bin := filepath.Join(binDir, strings.ReplaceAll(pkg, "/", "_")+"."+goarch+".test")
	build := exec.Command(goTool(t), "test", "-c", "-o", bin, "./"+pkg)
	build.Dir = root
	build.Env = buildEnv(goarch, "")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go test -c ./%s for %s: %v\n%s", pkg, goarch, err, b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	argv := append(append(slices.Clone(prefix), bin), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = runEnv()
	start := time.Now()
	out, err := cmd.CombinedOutput()
	r := testRun{out: durations.ReplaceAllString(string(out), "(T)"), secs: time.Since(start).Seconds()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		r.code = ee.ExitCode()
	default:
		t.Fatalf("%s tests of ./%s: %v\n%s", goarch, pkg, err, out)
	}
	return r
}

// fusedOp matches arm64 fused multiply-add instructions (Go assembler
// names): the compiler emits them for x*y+z unless a conversion rounds
// the product.
var fusedOp = regexp.MustCompile(`\bF(N)?M(ADD|SUB)[DS]\b`)

// forbiddenMath matches calls of math functions whose results differ
// across architectures (amd64 assembly versus pure Go with FMA).
var forbiddenMath = regexp.MustCompile(`\bCALL math\.(archExp|archLog|Exp|exp|Exp2|exp2|Expm1|expm1|Log|log|Log2|log2|Log10|log10|Log1p|log1p|Pow|pow)\(SB\)`)

// TestNoFusionInArm64Binary disassembles the arm64 goldset binary and
// requires that no function of this module contains a fused
// multiply-add, nor calls math's exp/log family: the static form of the
// determinism rules, covering code paths the cross-architecture
// selection does not reach. A failure names file:line; wrap the product
// in float64(...) (or use internal/detmath).
func TestNoFusionInArm64Binary(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles goldset for arm64; skipped with -short")
	}
	bin := buildGoldset(t, "arm64", "")
	cmd := exec.Command(goTool(t), "tool", "objdump", "-s", `^github\.com/goldset/goldset/`, bin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go tool objdump: %v", err)
	}
	var fn string
	funcs, insts := 0, 0
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "TEXT "); ok {
			fn, _, _ = strings.Cut(rest, " ")
			funcs++
			continue
		}
		f := strings.Split(strings.TrimSpace(line), "\t")
		if len(f) < 2 || fn == "" {
			continue
		}
		insts++
		asm := f[len(f)-1]
		switch {
		case fusedOp.MatchString(asm):
			t.Errorf("%s in %s: fused multiply-add %q (wrap the product in float64(...))", f[0], fn, strings.TrimSpace(asm))
		case forbiddenMath.MatchString(asm):
			t.Errorf("%s in %s: %q (use internal/detmath)", f[0], fn, strings.TrimSpace(asm))
		}
	}
	if funcs < 100 || insts < 10000 {
		t.Fatalf("objdump listed only %d functions, %d instructions of the module: filter or format changed?", funcs, insts)
	}
	t.Logf("checked %d instructions in %d functions of the module", insts, funcs)
}
