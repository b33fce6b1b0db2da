package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goldset/goldset/internal/testenv"
	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/npy"
)

// One test per reproduction of issue 11 (data loss, hangs, wrong verdicts,
// exit codes, size). Each names the reproduction it covers.

// runTimeout is run with a deadline: a command that blocks (a FIFO) fails
// the test instead of hanging it.
func runTimeout(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	type res struct {
		code     int
		out, err string
	}
	done := make(chan res, 1)
	go func() {
		c, o, e := run(t, args...)
		done <- res{c, o, e}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.err
	case <-time.After(20 * time.Second):
		t.Fatalf("goldset %v hung", args)
	}
	return 0, "", ""
}

// tree lists every path below dir with its mode, to prove nothing changed.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			b.WriteString(p + " " + fi.Mode().String() + "\n")
		}
		return nil
	})
	return b.String()
}

func mustGen(t *testing.T, args ...string) {
	t.Helper()
	if code, _, errs := run(t, append([]string{"gen", "-q"}, args...)...); code != 0 {
		t.Fatalf("gen %v: exit %d: %s", args, code, errs)
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
}

// Data loss: gen and merge replace only a bundle of their own suite, and
// only with --overwrite; empty selections write nothing.
func TestReproGenReplacesOnlyItsOwn(t *testing.T) {
	dir := t.TempDir()
	// fake/stage1-basic/manifest.json + src/ survive, even with --overwrite.
	fake := filepath.Join(dir, "fake")
	os.MkdirAll(filepath.Join(fake, "stage1-basic", "src"), 0o755)
	os.WriteFile(filepath.Join(fake, "stage1-basic", "manifest.json"), []byte(`{"manifest_version": 3}`), 0o644)
	os.WriteFile(filepath.Join(fake, "stage1-basic", "src", "main.c"), []byte("int main;"), 0o644)
	before := tree(t, fake)
	code, _, errs := run(t, "gen", "stage1-basic", "--case", "sm-781-fp16", "--out", fake, "-q", "--overwrite")
	if code != exitError || !strings.Contains(errs, "not a goldset bundle") || tree(t, fake) != before {
		t.Errorf("gen over a fake manifest: exit %d %s\n%s", code, errs, tree(t, fake))
	}
	// A real bundle needs --overwrite, and the replacement is announced.
	b := small(t, dir)
	code, _, errs = run(t, "gen", "stage1-basic", "--case", "sm-781-fp16", "--out", dir, "-q")
	if code != exitError || !strings.Contains(errs, "--overwrite") {
		t.Errorf("gen over its bundle without --overwrite: exit %d %s", code, errs)
	}
	code, _, errs = run(t, "gen", "stage1-basic", "--case", "sm-781-fp16", "--out", dir, "-q", "--overwrite")
	if code != 0 || !strings.Contains(errs, "will be replaced") || !strings.Contains(errs, "replaced "+b) {
		t.Errorf("gen --overwrite: exit %d, not announced: %s", code, errs)
	}
	// An extra file inside a bundle makes it not provably ours.
	os.WriteFile(filepath.Join(b, "sm-781-fp16", "notes.txt"), []byte("mine"), 0o644)
	if code, _, errs := run(t, "gen", "stage1-basic", "--case", "sm-781-fp16", "--out", dir, "-q", "--overwrite"); code != exitError || !strings.Contains(errs, "notes.txt") {
		t.Errorf("gen over a bundle holding a foreign file: exit %d %s", code, errs)
	}
}

func TestReproEmptySelection(t *testing.T) {
	dir := t.TempDir()
	b := small(t, dir)
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte("s"), 0o600)
	for _, args := range [][]string{
		{"--case", "sm-781-bf16", "--split", "hidden", "--secret-file", secret},
		{"--case", "sm-hidden-4096-bf16"}, // a hidden case, no secret
	} {
		code, _, errs := run(t, append([]string{"gen", "stage1-basic", "--out", dir, "-q", "--overwrite"}, args...)...)
		m, err := manifests.ReadManifest(b)
		if code != exitUsage || !strings.Contains(errs, "nothing to build") || err != nil || len(m.Cases) != 2 {
			t.Errorf("gen %v: exit %d %s; bundle now has %d cases (%v)", args, code, errs, len(m.Cases), err)
		}
	}
}

func TestReproMergeTargetAndLinks(t *testing.T) {
	dir := t.TempDir()
	sh := filepath.Join(dir, "sh")
	for _, s := range []string{"1/2", "2/2"} {
		mustGen(t, "stage1-basic", "--case", "mm-odd-7x129x781-fp16", "--case", "sm-781-fp16", "--shard", s, "--out", sh)
	}
	s1 := filepath.Join(sh, "stage1-basic.shard-1-of-2")
	s2 := filepath.Join(sh, "stage1-basic.shard-2-of-2")
	before := tree(t, sh)
	for _, out := range []string{s1, sh} {
		code, _, errs := run(t, "merge", "--out", out, "--overwrite", s1, s2)
		if code != exitUsage || !strings.Contains(errs, "overlaps an input shard") || tree(t, sh) != before {
			t.Errorf("merge --out %s: exit %d %s", out, code, errs)
		}
	}
	// A shard whose tensor is a link is refused, and no link is copied.
	m, _ := manifests.ReadManifest(s1)
	p := filepath.Join(s1, m.Cases[0].Tensors[0].Path)
	real := filepath.Join(dir, "real.npy")
	os.Rename(p, real)
	os.Symlink(real, p)
	out := filepath.Join(dir, "merged")
	code, _, errs := run(t, "merge", "--out", out, s1, s2)
	if code != exitMismatch || !strings.Contains(errs, "symbolic link") {
		t.Errorf("merge of a shard with a link: exit %d %s", code, errs)
	}
	if _, err := os.Lstat(out); !os.IsNotExist(err) {
		t.Errorf("merge left %s", out)
	}
	// A shard failing its sha256 is a failed check (3).
	os.Remove(p)
	data, _ := os.ReadFile(real)
	data[len(data)-1] ^= 1
	os.WriteFile(p, data, 0o644)
	if code, _, errs := run(t, "merge", "--out", out, s1, s2); code != exitMismatch || !strings.Contains(errs, "sha256") {
		t.Errorf("merge of a corrupt shard: exit %d %s", code, errs)
	}
}

// Hangs: FIFOs as candidates or tensors are refused at once, naming them.
func TestReproFIFOs(t *testing.T) {
	dir := t.TempDir()
	b := small(t, dir)
	fifo := filepath.Join(dir, "cand.npy")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	code, _, errs := runTimeout(t, "compare", b, "--case", "mm-odd-7x129x781-fp16", "--output", "c="+fifo)
	if code != exitError || !strings.Contains(errs, "named pipe") {
		t.Errorf("FIFO candidate: exit %d %s", code, errs)
	}
	// y is judged against its float32 truth, so the truth is the FIFO.
	y := filepath.Join(b, "sm-781-bf16", "y_truth.npy")
	keep := filepath.Join(dir, "y.npy")
	copyTree(t, filepath.Join(b, "sm-781-bf16", "y.npy"), keep)
	os.Remove(y)
	syscall.Mkfifo(y, 0o644)
	code, out, _ := runTimeout(t, "verify", b)
	if code != exitMismatch || !strings.Contains(out, "named pipe") {
		t.Errorf("FIFO tensor, verify: exit %d %s", code, out)
	}
	code, _, errs = runTimeout(t, "compare", b, "--case", "sm-781-bf16", "--output", "y="+keep, "--partial")
	if code != exitError || !strings.Contains(errs, "named pipe") {
		t.Errorf("FIFO tensor, compare: exit %d %s", code, errs)
	}
}

// Wrong verdicts: zeroed goldens, partial or duplicate outputs, links.
func TestReproCompareVerdicts(t *testing.T) {
	dir := t.TempDir()
	b := small(t, dir)
	m, _ := manifests.ReadManifest(b)
	c := m.Case("mm-odd-7x129x781-fp16")
	zeros := filepath.Join(dir, "zeros.npy")
	npy.WriteFile(zeros, npy.Header{Descr: npy.Float16, Shape: []int64{7, 781}}, make([]byte, 7*781*2))
	// Golden and truth zeroed in place: refused by sha256, never a PASS.
	zb := filepath.Join(dir, "zeroed")
	copyTree(t, b, zb)
	for _, n := range []string{"c", "c_truth"} {
		tn := c.Tensor(n)
		h, data, _ := npy.ReadFile(filepath.Join(zb, tn.Path))
		npy.WriteFile(filepath.Join(zb, tn.Path), h, make([]byte, len(data)))
	}
	code, out, errs := run(t, "compare", zb, "--case", c.ID, "--output", "c="+zeros)
	if code != exitMismatch || strings.Contains(out, "PASS") || !strings.Contains(errs, "sha256") {
		t.Errorf("zeroed golden: exit %d %s %s", code, out, errs)
	}
	// Softmax with only y: every graded output is required...
	sm := filepath.Join(b, "sm-781-bf16")
	code, _, errs = run(t, "compare", b, "--case", "sm-781-bf16", "--output", "y="+filepath.Join(sm, "y.npy"))
	if code != exitUsage || !strings.Contains(errs, "row_max, row_sum") {
		t.Errorf("softmax y only: exit %d %s", code, errs)
	}
	// ... unless --partial, which says what it skipped.
	code, out, _ = run(t, "compare", b, "--case", "sm-781-bf16", "--output", "y="+filepath.Join(sm, "y.npy"), "--partial", "--json")
	var res compareResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || strings.Join(res.Skipped, ",") != "row_max,row_sum" || !res.Partial {
		t.Errorf("--partial: exit %d %s", code, out)
	}
	// Duplicate names are refused (the zeros would otherwise be judged and
	// then shadowed).
	golden := filepath.Join(b, c.Tensor("c").Path)
	if code, _, errs := run(t, "compare", b, "--case", c.ID, "--output", "c="+zeros, "--output", "c="+golden); code != exitUsage || !strings.Contains(errs, "twice") {
		t.Errorf("duplicate --output: exit %d %s", code, errs)
	}
	// A symlinked candidate is refused too.
	link := filepath.Join(dir, "link.npy")
	os.Symlink(golden, link)
	if code, _, errs := run(t, "compare", b, "--case", c.ID, "--output", "c="+link); code != exitError || !strings.Contains(errs, "symbolic link") {
		t.Errorf("symlinked candidate: exit %d %s", code, errs)
	}
}

// Wrong verdicts: int64 index candidates (torch.topk) are judged, not refused.
func TestReproInt64Selection(t *testing.T) {
	dir := t.TempDir()
	mustGen(t, "stage2-paged", "--case", "quest-nb1-nb2-fp16", "--out", dir)
	b := filepath.Join(dir, "stage2-paged")
	m, _ := manifests.ReadManifest(b)
	c := m.Case("quest-nb1-nb2-fp16")
	args := []string{"compare", b, "--case", c.ID}
	for _, tn := range c.Tensors {
		if tn.Role != manifests.RoleGolden {
			continue
		}
		p := filepath.Join(b, tn.Path)
		if tn.Name == "selected" {
			h, data, err := npy.ReadFile(p)
			if err != nil || h.Descr != npy.Int32 {
				t.Fatalf("selected: %v %v", h, err)
			}
			var wide []byte
			for i := 0; i < len(data); i += 4 {
				v := int64(int32(uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24))
				wide = npy.AppendInt64s(wide, []int64{v})
			}
			p = filepath.Join(dir, "sel64.npy")
			npy.WriteFile(p, npy.Header{Descr: npy.Int64, Shape: h.Shape}, wide)
			// A wrong int64 selection still fails.
			bad := append([]byte(nil), wide...)
			bad[0] ^= 1
			npy.WriteFile(filepath.Join(dir, "bad64.npy"), npy.Header{Descr: npy.Int64, Shape: h.Shape}, bad)
		}
		args = append(args, "--output", tn.Name+"="+p)
	}
	if code, out, errs := run(t, args...); code != 0 {
		t.Errorf("int64 selection: exit %d %s %s", code, out, errs)
	}
	for i, a := range args {
		if strings.HasPrefix(a, "selected=") {
			args[i] = "selected=" + filepath.Join(dir, "bad64.npy")
		}
	}
	if code, _, _ := run(t, args...); code != exitMismatch {
		t.Errorf("wrong int64 selection: exit %d, want 3", code)
	}
}

// Wrong verdicts: a symlinked tensor or case directory is never followed.
func TestReproVerifyLinks(t *testing.T) {
	dir := t.TempDir()
	b := small(t, dir)
	x := filepath.Join(b, "sm-781-bf16", "x.npy")
	os.Remove(x)
	os.Symlink("/etc/passwd", x)
	code, out, _ := run(t, "verify", b)
	if code != exitMismatch || !strings.Contains(out, "symbolic link") || strings.Contains(out, "root") {
		t.Errorf("symlinked tensor: exit %d %s", code, out)
	}
	b2 := small(t, filepath.Join(dir, "two"))
	cd := filepath.Join(b2, "sm-781-bf16")
	os.Rename(cd, filepath.Join(dir, "elsewhere"))
	os.Symlink(filepath.Join(dir, "elsewhere"), cd)
	if code, out, _ := run(t, "verify", b2); code != exitMismatch || !strings.Contains(out, "symbolic link, not a directory") {
		t.Errorf("symlinked case directory: exit %d %s", code, out)
	}
}

// Exit codes: one table, per command.
func TestReproExitCodes(t *testing.T) {
	dir := t.TempDir()
	b := small(t, dir)
	m, _ := manifests.ReadManifest(b)
	golden := filepath.Join(b, m.Case("mm-odd-7x129x781-fp16").Tensor("c").Path)
	h, data, _ := npy.ReadFile(golden)
	write := func(name string, raw []byte) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, raw, 0o644)
		return p
	}
	// Hand-made headers numpy writes for big-endian and Fortran arrays.
	hdr := func(descr, order string) []byte {
		d := "{'descr': '" + descr + "', 'fortran_order': " + order + ", 'shape': (7, 781), }"
		for (10+len(d)+1)%64 != 0 {
			d += " "
		}
		d += "\n"
		return append([]byte("\x93NUMPY\x01\x00"+string(rune(len(d)))+"\x00"), d...)
	}
	be := write("be.npy", append(hdr(">f4", "False"), make([]byte, 7*781*4)...))
	fortran := write("f.npy", append(hdr("<f4", "True"), make([]byte, 7*781*4)...))
	i4 := filepath.Join(dir, "i4.npy")
	npy.WriteFile(i4, npy.Header{Descr: npy.Int32, Shape: h.Shape}, make([]byte, len(data)*2))
	badManifest := filepath.Join(dir, "badm")
	copyTree(t, b, badManifest)
	os.WriteFile(filepath.Join(badManifest, "manifest.json"), []byte(`{"schema_version": 1, "suite": ""}`), 0o644)
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"compare", b, "--case", "mm-odd-7x129x781-fp16", "--output", "c=" + i4}, exitMismatch, "dtype <i4"},
		{[]string{"compare", b, "--case", "mm-odd-7x129x781-fp16", "--output", "c=" + be}, exitMismatch, "big-endian"},
		{[]string{"compare", b, "--case", "mm-odd-7x129x781-fp16", "--output", "c=" + fortran}, exitMismatch, "Fortran"},
		{[]string{"verify", badManifest}, exitMismatch, "empty suite name"},
		{[]string{"gen", "stage1-basic", "--split", "nope", "--out", dir}, exitUsage, `unknown value "nope"`},
		{[]string{"gen", "stage1-basic", "--case", "nope", "--out", dir}, exitUsage, `no case "nope"`},
		{[]string{"compare", b, "--case", "sm-781-bf16", "--output", "zz=x.npy"}, exitUsage, "no golden output"},
		{[]string{"longbench", "build", "--data", dir, "--tokenizer", "t.json", "--subsets", "qasper", "--out", "o", "--n", "0"}, exitUsage, "--n"},
		{[]string{"longbench", "build", "--data", dir, "--tokenizer", "t.json", "--subsets", "qasper", "--out", "o", "--max-len", "0"}, exitUsage, "--max-len"},
		{[]string{"longbench", "build", "--data", dir, "--tokenizer", "t.json", "--subsets", "qasper"}, exitUsage, `"model" not set`},
		{[]string{"longbench", "biuld"}, exitUsage, `unknown command "biuld"`},
		{[]string{"longbench"}, exitUsage, "needs a subcommand"},
		{[]string{"gne"}, exitUsage, `unknown command "gne"`},
		{[]string{"gen", "stage1-basic", "--jobs", "0", "--out", dir}, exitUsage, "--jobs"},
		{[]string{"verify", b, "--jobs", "-5"}, exitUsage, "--jobs"},
		{[]string{"merge", "--out", filepath.Join(dir, "m"), "--jobs", "0", b}, exitUsage, "--jobs"},
		{[]string{"diff", b, b, "--jobs", "0"}, exitUsage, "--jobs"},
		{[]string{"compare", b, "--output", "c=x.npy"}, exitUsage, `"case" not set`},
		{[]string{"--version"}, exitOK, "goldset "},
	}
	for _, tc := range cases {
		code, out, errs := run(t, tc.args...)
		if code != tc.code || !strings.Contains(out+errs, tc.msg) {
			t.Errorf("goldset %v: exit %d (want %d), output %q, want it to mention %q", tc.args, code, tc.code, out+errs, tc.msg)
		}
	}
}

func TestReproShardEnvWithoutCount(t *testing.T) {
	t.Setenv("JOB_COMPLETION_INDEX", "2")
	t.Setenv("GOLDSET_SHARDS", "")
	dir := t.TempDir()
	code, _, errs := run(t, "gen", "stage1-basic", "--case", "sm-781-fp16", "--out", dir, "-q")
	if code != exitUsage || !strings.Contains(errs, "GOLDSET_SHARDS is not set") {
		t.Errorf("JOB_COMPLETION_INDEX alone: exit %d %s", code, errs)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("something was written: %v", ents)
	}
}

// Interrupts exit 130 and leave nothing, for gen, verify and compare (tokenize:
// TestReproSIGINTExits130).
func TestReproInterruptExitCode(t *testing.T) {
	dir := t.TempDir()
	b := small(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{
		{"gen", "stage1-basic", "--case", "sm-781-fp16", "--out", filepath.Join(dir, "x"), "-q"},
		{"verify", b},
		{"compare", b, "--case", "sm-781-bf16", "--output", "y=" + filepath.Join(b, "sm-781-bf16", "y.npy"), "--partial"},
	} {
		var out, errb bytes.Buffer
		code := Main(ctx, args, strings.NewReader(""), &out, &errb)
		if code != exitInterrupted || !strings.Contains(errb.String(), "interrupted") {
			t.Errorf("goldset %v under a cancelled context: exit %d %s", args, code, errb.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x", "stage1-basic")); !os.IsNotExist(err) {
		t.Errorf("interrupted gen left a bundle")
	}
}

// TestMain lets a test run the real main (signal handling included) in a
// child process: GOLDSET_TEST_MAIN=1 with the arguments after "--".
func TestMain(m *testing.M) {
	if os.Getenv("GOLDSET_TEST_MAIN") == "1" {
		for i, a := range os.Args {
			if a == "--" {
				os.Args = append([]string{"goldset"}, os.Args[i+1:]...)
				break
			}
		}
		main()
	}
	os.Exit(m.Run())
}

// A SIGINT reaches a command blocked reading its standard input (a pipe that
// never ends): it exits 130 at once instead of ignoring the signal.
func TestReproSIGINTExits130(t *testing.T) {
	tok := testenv.Qwen3TokenizerPath(t)
	cmd := exec.Command(os.Args[0], "--", "tokenize", "--tokenizer", tok)
	cmd.Env = append(os.Environ(), "GOLDSET_TEST_MAIN=1")
	pr, pw, _ := os.Pipe() // never closed until the end: stdin blocks
	defer pw.Close()
	cmd.Stdin = pr
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the tokenizer loads, then reads stdin
	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("tokenize ignored SIGINT")
	}
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
		t.Errorf("exit %d after SIGINT, want 130: %s", code, errb.String())
	}
}

// Size: gen with no suite builds only the default suites, says how much it
// will write, and --dry-run writes nothing.
func TestReproGenDefaultPlan(t *testing.T) {
	dir := t.TempDir()
	code, out, _ := run(t, "gen", "--dry-run", "--out", dir, "--json")
	var plan genPlan
	if code != 0 || json.Unmarshal([]byte(out), &plan) != nil || !plan.OK {
		t.Fatalf("gen --dry-run --json: exit %d %s", code, out)
	}
	var names []string
	for _, b := range plan.Bundles {
		names = append(names, b.Suite)
	}
	if strings.Join(names, ",") != "stage1-basic,stage2-paged,stage5-dsa,stage6-mxfp4" || plan.Bytes < 1<<30 || plan.Bytes > 30<<30 {
		t.Errorf("default plan: %v, %d bytes", names, plan.Bytes)
	}
	code, out, _ = run(t, "gen", "--dry-run", "--out", dir)
	if code != 0 || !strings.Contains(out, "will write "+filepath.Join(dir, "stage1-basic")) || !strings.Contains(out, "in total") || strings.Contains(out, "peer-sizes") {
		t.Errorf("gen --dry-run: %d %s", code, out)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("--dry-run wrote %v", ents)
	}
}

// Size: a candidate whose header is wrong is judged from the header alone,
// before its (claimed 4 GiB) data is read or allocated.
func TestReproCompareHeaderFirst(t *testing.T) {
	dir := t.TempDir()
	b := small(t, dir)
	big := filepath.Join(dir, "big.npy")
	hb, _ := npy.EncodeHeader(npy.Header{Descr: npy.Float32, Shape: []int64{1 << 30}})
	f, _ := os.Create(big)
	f.Write(hb)
	f.Truncate(int64(len(hb)) + 4<<30) // sparse: no disk used
	f.Close()
	start := time.Now()
	code, out, _ := run(t, "compare", b, "--case", "mm-odd-7x129x781-fp16", "--output", "c="+big)
	if code != exitMismatch || !strings.Contains(out, "shape [1073741824]") || time.Since(start) > 2*time.Second {
		t.Errorf("wrong 4 GiB candidate: exit %d in %v: %s", code, time.Since(start), out)
	}
}

// Errors are JSON too when --json is given.
func TestJSONErrors(t *testing.T) {
	dir := t.TempDir()
	b := small(t, dir)
	for _, args := range [][]string{
		{"compare", b, "--case", "nope", "--output", "c=x.npy", "--json"},
		{"verify", filepath.Join(dir, "missing"), "--json"},
		{"gen", "stage1-basic", "--case", "nope", "--out", dir, "--json"},
	} {
		code, out, _ := run(t, args...)
		var e jsonError
		if err := json.Unmarshal([]byte(out), &e); err != nil || e.OK || e.ExitCode != code || e.Error == "" {
			t.Errorf("goldset %v: exit %d, stdout %q is not a JSON error (%v)", args, code, out, err)
		}
	}
	// gen --json goes through encoding/json: a path that is not UTF-8 stays valid JSON.
	odd := filepath.Join(dir, "odd\xff")
	code, out, _ := run(t, "gen", "stage1-basic", "--case", "sm-781-fp16", "--out", odd, "-q", "--json")
	var sum bundleSummary
	if code != 0 || json.Unmarshal([]byte(out), &sum) != nil || !sum.OK || sum.Cases != 1 {
		t.Errorf("gen --json with a non-UTF-8 path: exit %d %q", code, out)
	}
}

// Data loss (longbench): --overwrite replaces only a previous build.
func TestReproLongbenchOverwrite(t *testing.T) {
	tok, data := testenv.Qwen3TokenizerPath(t), testenv.LongBenchSample(t)
	dir := t.TempDir()
	lb := func(out string, extra ...string) (int, string) {
		args := append([]string{"longbench", "build", "--data", data, "--tokenizer", tok, "--model", "Qwen/Qwen3-8B", "--subsets", "qasper", "--n", "2", "--truncate-at", "2000", "-q", "--out", out}, extra...)
		code, _, errs := run(t, args...)
		return code, errs
	}
	precious := filepath.Join(dir, "precious")
	os.MkdirAll(filepath.Join(precious, "sub"), 0o755)
	os.WriteFile(filepath.Join(precious, "thesis.txt"), []byte("thesis"), 0o644)
	keep := filepath.Join(dir, "keep.npy")
	os.WriteFile(keep, []byte("\x93NUMPY"), 0o644)
	for _, out := range []string{precious, keep} {
		before := tree(t, out)
		if code, errs := lb(out, "--overwrite"); code != exitError || !strings.Contains(errs, "not a goldset longbench build") || tree(t, out) != before {
			t.Errorf("longbench --overwrite %s: exit %d %s", out, code, errs)
		}
	}
	own := filepath.Join(dir, "own")
	if code, errs := lb(own); code != 0 {
		t.Fatal(errs)
	}
	if code, errs := lb(own); code != exitError || !strings.Contains(errs, "--overwrite") {
		t.Errorf("rebuild without --overwrite: exit %d %s", code, errs)
	}
	if code, errs := lb(own, "--overwrite", "--kernel-suite"); code != 0 {
		t.Errorf("rebuild with --overwrite: exit %d %s", code, errs)
	}
	// A build with its kernel bundle is still ours; a foreign file in it is not.
	if code, errs := lb(own, "--overwrite"); code != 0 {
		t.Errorf("rebuild over a build with kernels: exit %d %s", code, errs)
	}
	os.WriteFile(filepath.Join(own, "notes.md"), []byte("mine"), 0o644)
	if code, errs := lb(own, "--overwrite"); code != exitError || !strings.Contains(errs, "notes.md") {
		t.Errorf("rebuild over a build holding a foreign file: exit %d %s", code, errs)
	}
}

// Wrong verdicts (longbench): an unknown tokenizer.json is refused, or with
// --tokenizer-any marked; invalid UTF-8 is an error naming line and offset.
func TestReproTokenizerAndUTF8(t *testing.T) {
	tok, data := testenv.Qwen3TokenizerPath(t), testenv.LongBenchSample(t)
	dir := t.TempDir()
	raw, _ := os.ReadFile(tok)
	other := filepath.Join(dir, "tokenizer.json")
	os.WriteFile(other, bytes.Replace(raw, []byte(`"<|im_start|>"`), []byte(`"<|im_begin|>"`), 1), 0o644)
	txt := filepath.Join(dir, "t.txt")
	os.WriteFile(txt, []byte("hello <|im_start|>"), 0o644)
	if code, _, errs := run(t, "tokenize", "--tokenizer", other, txt); code != exitError || !strings.Contains(errs, "not the known Qwen3 tokenizer.json") {
		t.Errorf("tokenize with another tokenizer.json: exit %d %s", code, errs)
	}
	base := []string{"longbench", "build", "--data", data, "--model", "Qwen/Qwen3-8B", "--subsets", "qasper", "--n", "2", "--truncate-at", "2000", "-q"}
	if code, _, errs := run(t, append(base, "--tokenizer", other, "--out", filepath.Join(dir, "a"))...); code != exitError || !strings.Contains(errs, "--tokenizer-any") {
		t.Errorf("longbench with another tokenizer.json: exit %d %s", code, errs)
	}
	out := filepath.Join(dir, "b")
	if code, _, errs := run(t, append(base, "--tokenizer", other, "--out", out, "--tokenizer-any")...); code != 0 {
		t.Fatalf("--tokenizer-any: %d %s", code, errs)
	}
	var m struct {
		Tokenizer struct {
			Verified bool   `json:"verified"`
			Note     string `json:"note"`
		} `json:"tokenizer"`
		Sources []struct {
			Lossy int `json:"lossy_utf8_lines"`
		} `json:"sources"`
	}
	mb, _ := os.ReadFile(filepath.Join(out, "manifest.json"))
	if json.Unmarshal(mb, &m) != nil || m.Tokenizer.Verified || !strings.Contains(m.Tokenizer.Note, "unverified") {
		t.Errorf("manifest does not mark the tokenizer unverified: %+v", m.Tokenizer)
	}
	// Invalid UTF-8 in line 2.
	bad := filepath.Join(dir, "data")
	copyTree(t, data, bad)
	src, _ := os.ReadFile(filepath.Join(data, "qasper.jsonl"))
	lines := bytes.SplitN(src, []byte("\n"), 3)
	i := bytes.Index(lines[1], []byte(`"context": "`)) + 20
	lines[1] = append(append(append([]byte(nil), lines[1][:i]...), 0xff), lines[1][i:]...)
	os.WriteFile(filepath.Join(bad, "qasper.jsonl"), bytes.Join(lines, []byte("\n")), 0o644)
	base = []string{"longbench", "build", "--data", bad, "--tokenizer", tok, "--model", "Qwen/Qwen3-8B", "--subsets", "qasper", "--n", "2", "--truncate-at", "2000", "-q"}
	code, _, errs := run(t, append(base, "--out", filepath.Join(dir, "c"))...)
	wantOff := len(lines[0]) + 1 + i
	if code != exitError || !strings.Contains(errs, "qasper.jsonl:2: invalid UTF-8 at byte offset "+itoa(wantOff)) {
		t.Errorf("invalid UTF-8: exit %d %s (want offset %d)", code, errs, wantOff)
	}
	out = filepath.Join(dir, "d")
	if code, _, errs := run(t, append(base, "--out", out, "--lossy-utf8")...); code != 0 {
		t.Fatalf("--lossy-utf8: %d %s", code, errs)
	}
	mb, _ = os.ReadFile(filepath.Join(out, "manifest.json"))
	if json.Unmarshal(mb, &m) != nil || len(m.Sources) != 1 || m.Sources[0].Lossy != 1 {
		t.Errorf("manifest does not count the lossy line: %+v", m.Sources)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// negatives writes only into an empty directory or over its own earlier
// controls (with --overwrite).
func TestNegativesOutIsOurs(t *testing.T) {
	dir := t.TempDir()
	b := small(t, dir)
	foreign := filepath.Join(dir, "mine")
	os.MkdirAll(filepath.Join(foreign, "zeros"), 0o755)
	os.WriteFile(filepath.Join(foreign, "zeros", "y.npy"), []byte("my file"), 0o644)
	code, _, errs := run(t, "negatives", b, "--case", "sm-781-bf16", "--out", foreign)
	if got, _ := os.ReadFile(filepath.Join(foreign, "zeros", "y.npy")); code != exitError || string(got) != "my file" || !strings.Contains(errs, "refusing") {
		t.Errorf("negatives into a foreign directory: exit %d %s; file now %q", code, errs, got)
	}
	neg := filepath.Join(dir, "neg")
	if code, _, errs := run(t, "negatives", b, "--case", "sm-781-bf16", "--out", neg); code != 0 {
		t.Fatalf("negatives: %d %s", code, errs)
	}
	if code, _, errs := run(t, "negatives", b, "--case", "sm-781-bf16", "--out", neg); code != exitError || !strings.Contains(errs, "--overwrite") {
		t.Errorf("second run without --overwrite: exit %d %s", code, errs)
	}
	if code, _, errs := run(t, "negatives", b, "--case", "sm-781-bf16", "--out", neg, "--overwrite"); code != 0 {
		t.Errorf("second run with --overwrite: exit %d %s", code, errs)
	}
}
