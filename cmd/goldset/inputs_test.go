package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/goldset/goldset/internal/testenv"
	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/serving/servingtest"
)

// pathLike is what a flag's name or usage says when it names a file or a
// directory; such a flag must be marked with markPath (paths.go).
var pathLike = regexp.MustCompile(`(?i)\b(file|files|recipe|template|templates|tokenizer|model|data|secret|workload|baseline|manifest|dir|directory|path|svg|trace|profile|out|output|result|bundle)\b|\.json|\.txt`)

// input is one command-line input that names a file or directory.
type input struct {
	cmd     string // command path without "goldset", e.g. "serving check"
	name    string // "--flag" or "ARGS"
	kind    string // inputFile or inputDir
	fixture string
}

func (in input) String() string { return in.cmd + " " + in.name }

// walkInputs lists every marked input of the command tree and fails t for
// every string flag that looks like a path but is not marked, and every
// runnable command whose positional arguments are not described.
func walkInputs(t *testing.T) []input {
	t.Helper()
	var out []input
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimPrefix(strings.TrimPrefix(c.CommandPath(), "goldset"), " ")
		if c.Runnable() && !c.HasSubCommands() {
			a, ok := c.Annotations[annArgs]
			switch {
			case !ok:
				t.Errorf("goldset %s: positional arguments not described (markArgs in paths.go)", path)
			case a != notPath:
				kind, fix, _ := strings.Cut(a, " ")
				out = append(out, input{path, "ARGS", kind, fix})
			}
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			ann, ok := f.Annotations[annPath]
			if !ok {
				if strings.HasPrefix(f.Value.Type(), "string") && (pathLike.MatchString(f.Name) || pathLike.MatchString(f.Usage)) {
					t.Errorf("goldset %s --%s (%q) looks like it names a file but is not marked (markPath in paths.go)", path, f.Name, f.Usage)
				}
				return
			}
			if ann[0] == inputFile || ann[0] == inputDir {
				out = append(out, input{path, "--" + f.Name, ann[0], ann[1]})
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(&streams{}))
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// inputFixtures are valid values for every fixture kind, and the
// directories' key files (what a probe inside a directory replaces).
type inputFixtures struct {
	dir   string
	files map[string]string
}

// keyFile is the file each directory fixture is read through first.
var keyFile = map[string]string{
	"bundle": "manifest.json", "shard": "manifest.json", "workload": "manifest.json",
	"data": "lb2.jsonl", "templates": "dataset2prompt.json",
	"export": "goldset-export.json", "score-workload": "manifest.json", "score-data": "gov_report.jsonl",
}

func newInputFixtures(t *testing.T) *inputFixtures {
	t.Helper()
	dir := t.TempDir()
	fx := &inputFixtures{dir: dir, files: map[string]string{}}
	put := func(name, content string) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	b := small(t, filepath.Join(dir, "b"))
	fx.files["bundle"] = b
	fx.files["manifest"] = filepath.Join(b, "manifest.json")
	fx.files["candidate"] = filepath.Join(b, "sm-781-bf16", "y.npy")
	for _, s := range []string{"1/2", "2/2"} {
		mustGen(t, "stage1-basic", "--case", "mm-odd-7x129x781-fp16", "--case", "sm-781-fp16", "--shard", s, "--out", filepath.Join(dir, "sh"))
	}
	fx.files["shard1"] = filepath.Join(dir, "sh", "stage1-basic.shard-1-of-2")
	fx.files["shard"] = filepath.Join(dir, "sh", "stage1-basic.shard-2-of-2")
	fx.files["timing"] = put("timing.json", `{"schema": "goldset-timing/1", "cases": [{"case": "sm-781-bf16", "times_ms": [1.0, 1.1, 0.9]}]}`)
	fx.files["secret"] = put("secret", "s3cret\n")
	fx.files["recipe"] = put("mine.json", `{"name": "mine", "version": "0.1.0", "spec_version": 1, "seed": 3,
 "cases": [{"id": "sm", "op": "softmax", "split": "public", "params": {"m": 4, "n": 300, "dtype": "float16"}}]}`)
	tok, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "longbench", "tokenizer", "testdata", "tiny.json"))
	if err != nil {
		t.Fatal(err)
	}
	fx.files["tokenizer"] = put("tokenizer.json", string(tok))
	fx.files["text"] = put("prompt.txt", "Hello, world")
	var recs strings.Builder
	for i := range 3 {
		line, _ := json.Marshal(map[string]any{"_id": fmt.Sprint("r", i), "domain": "d", "sub_domain": "s", "difficulty": "easy", "length": "short",
			"question": "q?", "choice_A": "a", "choice_B": "b", "choice_C": "c", "choice_D": "d", "answer": "A", "context": strings.Repeat("word ", 20+10*i)})
		recs.Write(append(line, '\n'))
	}
	fx.files["data"] = filepath.Dir(put("lb2/lb2.jsonl", recs.String()))
	put("lb2/config/dataset2prompt.json", `{"lb2": "{context} {question}"}`)
	put("lb2/config/dataset2maxlen.json", `{"lb2": 8}`)
	fx.files["templates"] = filepath.Join(fx.files["data"], "config")
	fx.files["v2-template"] = put("0shot.txt", "Read $DOC$ and answer $Q$: $C_A$ $C_B$ $C_C$ $C_D$")
	wl, in, outLens := servingFixture(t)
	fx.files["workload"] = wl
	fx.files["result"] = writeRun(t, dir, "run.json", servingtest.ConsistentRun(in, outLens), 1)
	score, err := filepath.Abs(filepath.Join("..", "..", "serving", "testdata", "score"))
	if err != nil {
		t.Fatal(err)
	}
	fx.files["score-result"] = filepath.Join(score, "sparse.jsonl")
	fx.files["score-baseline"] = filepath.Join(score, "dense.json")
	fx.files["score-workload"] = filepath.Join(score, "workload")
	fx.files["score-data"] = filepath.Join(score, "data")
	fx.files["export"] = filepath.Join(dir, "export")
	if code, out, _ := goldsetProcess(t, time.Minute, "export", b, "--format", "safetensors", "--out", fx.files["export"], "-q"); code != 0 {
		t.Fatalf("export fixture: exit %d\n%s", code, out)
	}
	// A small pipeline chain: its bundle is also a valid --dir of
	// candidates (DIR/<stage-case>/<output>.npy are the goldens).
	pipe := put("pipe.json", `{"name": "pipe", "version": "0.1.0", "spec_version": 1, "seed": 42, "cases": [
 {"id": "paged", "op": "pipeline", "split": "public", "params": {"chain": "paged", "hq": 4, "hkv": 2, "d": 16, "dtype": "bfloat16",
  "schedule": {"max_num_batched_tokens": 48, "max_num_seqs": 8, "block_size": 16, "num_blocks": 48, "seed": 1},
  "requests": {"n": 6, "prompt_mean": 50, "prompt_sigma": 0.5, "prompt_max": 120, "output_mean": 6, "output_sigma": 0.3, "output_max": 12, "seed": 7, "arrival_every": 1}, "steps": 2}}]}`)
	if code, out, _ := goldsetProcess(t, time.Minute, "gen", "--recipe", pipe, "--out", filepath.Join(dir, "pb"), "-q"); code != 0 {
		t.Fatalf("pipeline fixture: exit %d\n%s", code, out)
	}
	fx.files["chain-bundle"] = filepath.Join(dir, "pb", "pipe")
	fx.files["chain-candidates"] = fx.files["chain-bundle"]
	pm, err := manifests.ReadManifest(fx.files["chain-bundle"])
	if err != nil || len(pm.Cases) == 0 {
		t.Fatalf("pipeline fixture: %v", err)
	}
	keyFile["chain-candidates"] = pm.Cases[0].ID + "/" + pm.Cases[0].Tensors[len(pm.Cases[0].Tensors)-1].Name + ".npy"
	fx.files["model"] = put("model.json", `{"name": "m", "layers": 2, "q_heads": 4, "kv_heads": 2, "head_dim": 64, "dtype": "bfloat16", "max_context": 4096}`)
	return fx
}

// invocation returns the command line probing in with value v, every other
// input valid; out is a fresh output path.
func (fx *inputFixtures) invocation(in input, v, out string) []string {
	f := fx.files
	lb := func(data, templates, tok, v2 string) []string {
		return []string{"longbench", "build", "--data", data, "--templates", templates, "--tokenizer", tok, "--tokenizer-any",
			"--v2-template", v2, "--subsets", "lb2", "--n", "2", "--no-chat", "--model", "m", "--out", out, "-q"}
	}
	switch in.String() {
	case "compare ARGS":
		return []string{"compare", v, "--case", "sm-781-bf16", "--output", "y=" + f["candidate"], "--partial", "-q"}
	case "compare --output":
		return []string{"compare", f["bundle"], "--case", "sm-781-bf16", "--output", "y=" + v, "--partial", "-q"}
	case "compare --timing":
		return []string{"compare", f["bundle"], "--timing", v}
	case "compare --dir":
		return []string{"compare", f["chain-bundle"], "--chain", "paged", "--dir", v, "-q"}
	case "diff ARGS":
		return []string{"diff", f["bundle"], v}
	case "export ARGS":
		return []string{"export", v, "--format", "safetensors", "--out", out, "-q"}
	case "import ARGS":
		return []string{"import", v}
	case "import --bundle":
		return []string{"import", f["export"], "--bundle", v}
	case "longbench schedule --workload":
		return []string{"longbench", "schedule", "--workload", v, "--num-blocks", "20000", "--out", out, "-q"}
	case "longbench schedule --model":
		return []string{"longbench", "schedule", "--workload", f["workload"], "--model", v, "--kv-budget", "1GiB", "-q"}
	case "serving report --data":
		return []string{"serving", "report", f["score-baseline"], "--workload", f["score-workload"], "--data", v}
	case "serving score ARGS":
		return []string{"serving", "score", v, "--workload", f["score-workload"], "--data", f["score-data"], "--resamples", "100"}
	case "serving score --workload":
		return []string{"serving", "score", f["score-result"], "--workload", v, "--data", f["score-data"], "--resamples", "100"}
	case "serving score --data":
		return []string{"serving", "score", f["score-result"], "--workload", f["score-workload"], "--data", v, "--resamples", "100"}
	case "serving score --baseline":
		return []string{"serving", "score", f["score-result"], "--workload", f["score-workload"], "--data", f["score-data"], "--baseline", v, "--resamples", "100"}
	case "serving score --tokenizer":
		return []string{"serving", "score", f["score-result"], "--workload", f["score-workload"], "--data", f["score-data"], "--baseline", f["score-baseline"], "--tokenizer", v, "--tokenizer-any", "--resamples", "100"}
	case "gen --from":
		return []string{"gen", "--from", v, "--out", out, "-q"}
	case "gen --secret-file":
		return []string{"gen", "stage1-basic", "--case", "sm-781-bf16", "--dry-run", "--out", out, "--secret-file", v}
	case "gen --recipe":
		return []string{"gen", "--recipe", v, "--dry-run", "--out", out}
	case "inspect ARGS":
		return []string{"inspect", v}
	case "longbench build --data":
		return lb(v, f["templates"], f["tokenizer"], f["v2-template"])
	case "longbench build --templates":
		return lb(f["data"], v, f["tokenizer"], f["v2-template"])
	case "longbench build --tokenizer":
		return lb(f["data"], f["templates"], v, f["v2-template"])
	case "longbench build --v2-template":
		return lb(f["data"], f["templates"], f["tokenizer"], v)
	case "merge ARGS":
		return []string{"merge", "--out", out, "-q", f["shard1"], v}
	case "negatives ARGS":
		return []string{"negatives", v, "--case", "sm-781-bf16", "--out", out}
	case "serving check ARGS":
		return []string{"serving", "check", v, "--workload", f["workload"]}
	case "serving check --workload":
		return []string{"serving", "check", f["result"], "--workload", v}
	case "serving report ARGS":
		return []string{"serving", "report", v}
	case "serving report --baseline":
		return []string{"serving", "report", f["result"], "--baseline", v, "--workload", f["workload"]}
	case "serving report --workload":
		return []string{"serving", "report", f["result"], "--workload", v}
	case "serving size --model":
		return []string{"serving", "size", "--model", v, "--kv-budget", "10GiB"}
	case "serving size --workload":
		return []string{"serving", "size", "--model", f["model"], "--kv-budget", "10GiB", "--workload", v}
	case "tokenize ARGS":
		return []string{"tokenize", "--tokenizer", f["tokenizer"], "--tokenizer-any", v}
	case "tokenize --tokenizer":
		return []string{"tokenize", "--tokenizer", v, "--tokenizer-any", f["text"]}
	case "verify ARGS":
		return []string{"verify", v, "-q"}
	case "verify --secret-file":
		return []string{"verify", f["bundle"], "--regenerate", "--secret-file", v, "-q"}
	}
	return nil
}

// goldsetProcess runs the real main in a child process (TestMain) with a
// deadline: a command that blocks is killed and reported, never waited for.
func goldsetProcess(t *testing.T, limit time.Duration, args ...string) (code int, output string, took time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], append([]string{"--"}, args...)...)
	cmd.Env = append(os.Environ(), "GOLDSET_TEST_MAIN=1")
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	start := time.Now()
	err := cmd.Run()
	took = time.Since(start)
	if ctx.Err() != nil {
		t.Errorf("goldset %s: still running after %v (killed): a hang\n%s", strings.Join(args, " "), limit, b.String())
		return -1, b.String(), took
	}
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), b.String(), took
}

// probeCode is the exit code a refused input gives: 1, an unreadable input
// (doc.go's table).
const probeCode = exitError

// TestEveryInputRefusesFIFOsLinksAndDirectories walks the command tree and
// feeds every input that names a file a FIFO, a symbolic link (to a valid
// file) and a directory, and every input that names a directory a FIFO in
// its place and its key file (manifest.json, the subset's .jsonl,
// dataset2prompt.json) as a FIFO, a link and a directory. Each must exit
// at once with exit 1 and a message naming the path and what it is; the
// same command line with the valid fixture exits 0 (so the refusal is the
// probe's).
func TestEveryInputRefusesFIFOsLinksAndDirectories(t *testing.T) {
	inputs := walkInputs(t)
	fx := newInputFixtures(t)
	probes := filepath.Join(fx.dir, "probes")
	os.Mkdir(probes, 0o755)
	n := 0
	fresh := func(what string) string {
		n++
		return filepath.Join(probes, fmt.Sprintf("%02d-%s", n, what))
	}
	mkfifo := func(p string) {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skipf("no FIFOs here: %v", err)
		}
	}
	const limit = 10 * time.Second
	check := func(in input, v, want, probe string) {
		args := fx.invocation(in, v, fresh("out"))
		code, out, took := goldsetProcess(t, limit, args...)
		t.Logf("%s: $ goldset %s\n  exit %d in %v: %s", in, strings.Join(args, " "), code, took.Round(time.Millisecond), strings.TrimSpace(out))
		if code != probeCode || !strings.Contains(out, probe) || !strings.Contains(out, want) {
			t.Errorf("%s with %s: exit %d, want %d and a message naming %s as %q:\n%s", in, v, code, probeCode, probe, want, out)
		}
		if took > 5*time.Second {
			t.Errorf("%s with %s: took %v", in, v, took)
		}
	}
	seen := map[string]bool{}
	for _, in := range inputs {
		valid, ok := fx.files[in.fixture]
		args := fx.invocation(in, valid, fresh("out"))
		if !ok || args == nil {
			t.Errorf("%s (fixture %q): no fixture or invocation in inputs_test.go: add one so the walk probes it", in, in.fixture)
			continue
		}
		seen[in.String()] = true
		if code, out, _ := goldsetProcess(t, 60*time.Second, args...); code != 0 {
			t.Errorf("%s: the valid invocation fails, so probes prove nothing: exit %d\n$ goldset %s\n%s", in, code, strings.Join(args, " "), out)
			continue
		}
		fifo := fresh("fifo")
		mkfifo(fifo)
		switch in.kind {
		case inputFile:
			check(in, fifo, "named pipe (FIFO)", fifo)
			link := fresh("link")
			os.Symlink(valid, link)
			check(in, link, "is a symbolic link (to "+valid+"); goldset does not follow links: name "+valid+" itself", link)
			d := fresh("dir")
			os.Mkdir(d, 0o755)
			check(in, d, "is a directory", d)
		case inputDir:
			check(in, fifo, "is a named pipe (FIFO)", fifo)
			key := keyFile[in.fixture]
			for _, what := range []string{"fifo", "link", "dir"} {
				d := fresh("dir-" + what)
				copyTree(t, valid, d)
				p := filepath.Join(d, key)
				os.Remove(p)
				switch what {
				case "fifo":
					mkfifo(p)
					check(in, d, "is a named pipe (FIFO)", p)
				case "link":
					os.Symlink(filepath.Join(valid, key), p)
					check(in, d, "is a symbolic link (to "+filepath.Join(valid, key)+")", p)
				case "dir":
					os.Mkdir(p, 0o755)
					check(in, d, "is a directory", p)
				}
			}
		}
	}
	// The table has no entry the tree lacks (a removed flag).
	for _, s := range []string{"compare ARGS", "serving check ARGS", "tokenize --tokenizer", "gen --recipe", "longbench build --v2-template", "serving size --model", "serving report ARGS"} {
		if !seen[s] {
			t.Errorf("the walk did not find %s", s)
		}
	}
}

// Inputs with a natural size are refused above it before anything is read:
// each probe is a sparse file one byte over the limit (nothing to read in
// the time allowed if it were read), and the refusal names it and the limit.
func TestInputSizeLimits(t *testing.T) {
	fx := newInputFixtures(t)
	for _, tc := range []struct {
		in    input
		limit string
		bytes int64
	}{
		{input{cmd: "gen", name: "--recipe"}, "16 MiB", 16<<20 + 1},
		{input{cmd: "gen", name: "--secret-file"}, "64 KiB", 64<<10 + 1},
		{input{cmd: "tokenize", name: "--tokenizer"}, "128 MiB", 128<<20 + 1},
		{input{cmd: "longbench build", name: "--v2-template"}, "4 MiB", 4<<20 + 1},
		{input{cmd: "serving size", name: "--model"}, "16 MiB", 16<<20 + 1},
		{input{cmd: "serving report", name: "ARGS"}, "1 GiB", 1<<30 + 1},
	} {
		p := filepath.Join(t.TempDir(), "big")
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(tc.bytes); err != nil {
			t.Skip(err)
		}
		f.Close()
		args := fx.invocation(tc.in, p, filepath.Join(t.TempDir(), "out"))
		code, out, took := goldsetProcess(t, 10*time.Second, args...)
		want := fmt.Sprintf("%s is %d bytes, more than the %d (%s)", p, tc.bytes, tc.bytes-1, tc.limit)
		if code != exitError || !strings.Contains(out, want) || !strings.Contains(out, "file too large") {
			t.Errorf("%s with a %d-byte file: exit %d in %v, want 1 naming it and the %s limit:\n%s", tc.in, tc.bytes, code, took, tc.limit, out)
		}
		t.Logf("%s: exit %d in %v: %s", tc.in, code, took.Round(time.Millisecond), strings.TrimSpace(out))
	}
}
