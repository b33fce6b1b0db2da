package longbench

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/goldset/goldset/internal/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// toyData writes a data dir with two v1 subsets of varied lengths and a
// config of our own templates.
func toyData(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	r := NewSplitMix64(99)
	var qa, trec strings.Builder
	for i := 0; i < 40; i++ {
		ctx := strings.Repeat("w", 50+r.IntN(400)) + " é “q” <think>"
		line, _ := json.Marshal(map[string]any{"input": fmt.Sprintf("q%d?", i), "context": ctx, "answers": []string{"a"},
			"length": 3, "dataset": "qa", "language": "en", "all_classes": nil, "_id": fmt.Sprintf("qa%02d", i)})
		qa.Write(append(line, '\n'))
		line, _ = json.Marshal(map[string]any{"input": "Type:", "context": strings.Repeat("t", 100+r.IntN(100)),
			"answers": []string{"b"}, "length": 1, "dataset": "trec", "language": "en", "all_classes": []string{"x", "y"}, "_id": fmt.Sprintf("tr%02d", i)})
		trec.Write(append(line, '\n'))
	}
	writeFiles(t, dir, map[string]string{
		"qa.jsonl":             qa.String(),
		"trec.jsonl":           trec.String(),
		"config/" + PromptFile: `{"qa": "Read.\n\n{context}\n\nQuestion: {input}\nAnswer:", "trec": "Classify.\n{context}\n{input}"}`,
		"config/" + MaxLenFile: `{"qa": 32, "trec": 8}`,
	})
	return dir
}

func toyOptions(dataDir, out string) BuildOptions {
	return BuildOptions{DataDir: dataDir, Subsets: []string{"qa", "trec"}, N: 20, TargetMean: 250, Seed: 5,
		Out: out, Prompt: PromptOptions{ContextLen: 400, NoThinking: true}, Model: "toy"}
}

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = b
	}
	return m
}

// parseNpy returns the header dict and the data of a version 1.0 .npy file.
func parseNpy(t *testing.T, b []byte) (string, []byte) {
	t.Helper()
	if len(b) < 10 || string(b[:8]) != "\x93NUMPY\x01\x00" {
		t.Fatalf("not npy v1.0: %q", b[:min(len(b), 10)])
	}
	hl := int(binary.LittleEndian.Uint16(b[8:10]))
	if (10+hl)%64 != 0 {
		t.Errorf("header not 64-byte aligned")
	}
	return string(b[10 : 10+hl]), b[10+hl:]
}

func TestBuildOutputs(t *testing.T) {
	data := toyData(t)
	out := filepath.Join(t.TempDir(), "bundle")
	var progress bytes.Buffer
	res, err := Build(context.Background(), toyOptions(data, out), hashedTok{}, &progress)
	if err != nil {
		t.Fatal(err)
	}
	files := readDir(t, out)
	all := []string{ServeFile, ChatBatchFile, SGLangFile, ShareGPTFile, PromptIDsFile, OfflineScript, IDsFile, OffsetsFile, LensFile, HistogramFile, ManifestFile}
	for _, name := range all {
		if _, ok := files[name]; !ok {
			t.Fatalf("missing %s", name)
		}
	}
	if len(files) != len(all) {
		t.Errorf("%d files in output", len(files))
	}
	var m Manifest
	if err := json.Unmarshal(files[ManifestFile], &m); err != nil {
		t.Fatal(err)
	}
	if len(res.Lengths) != 20 || len(m.Prompts) != 20 || m.Tokenizer.SHA256 != "toy-byte-tokenizer" || m.Selection.Seed != 5 {
		t.Fatalf("lengths %d prompts %d manifest %+v", len(res.Lengths), len(m.Prompts), m.Tokenizer)
	}
	if rel := res.Stats.Mean/250 - 1; rel > 0.02 || rel < -0.02 {
		t.Errorf("mean %.1f", res.Stats.Mean)
	}
	if len(m.Sources) != 2 || m.Sources[0].Path != "qa.jsonl" || m.Sources[0].Records != 40 || len(m.Templates) != 2 {
		t.Errorf("sources %+v templates %+v", m.Sources, m.Templates)
	}
	if m.Subsets["qa"]+m.Subsets["trec"] != 20 {
		t.Errorf("per subset %v", m.Subsets)
	}
	if !strings.Contains(progress.String(), "mean=") || !strings.Contains(progress.String(), "|#") {
		t.Errorf("progress lacks stats/histogram:\n%s", progress.String())
	}

	// serve.jsonl agrees with the manifest (every consumer file field by
	// field: consumers_test.go).
	tok := byteTok{}
	serveLines := strings.Split(strings.TrimSuffix(string(files[ServeFile]), "\n"), "\n")
	if len(serveLines) != 20 {
		t.Fatalf("%d serve lines", len(serveLines))
	}
	var allIDs []int
	for i := range serveLines {
		var s map[string]any
		if err := json.Unmarshal([]byte(serveLines[i]), &s); err != nil || len(s) != 3 {
			t.Fatalf("serve line %d: %v %v", i, err, s)
		}
		prompt := s["prompt"].(string)
		pi := m.Prompts[i]
		if int(s["output_tokens"].(float64)) != pi.MaxNewTokens {
			t.Errorf("line %d output_tokens %v want %d", i, s["output_tokens"], pi.MaxNewTokens)
		}
		if pi.Subset == "trec" && (strings.HasPrefix(prompt, ChatHead) || pi.Chat) {
			t.Errorf("trec prompt %d has chat template", i)
		}
		if pi.Subset == "qa" && (!strings.HasPrefix(prompt, ChatHead) || !strings.HasSuffix(prompt, ChatTail+ChatNoThinking)) {
			t.Errorf("qa prompt %d lacks chat template", i)
		}
		ids := tok.Encode(prompt)
		if len(ids) != res.Lengths[i] || pi.PromptTokens != len(ids) {
			t.Errorf("prompt %d: %d tokens, result says %d", i, len(ids), res.Lengths[i])
		}
		allIDs = append(allIDs, ids...)
		if !strings.Contains(serveLines[i], `"<|im_start|>`) && pi.Chat {
			t.Errorf("serve line %d escapes HTML characters", i)
		}
	}

	// .npy files.
	hdr, raw := parseNpy(t, files[IDsFile])
	if !strings.Contains(hdr, "'descr': '<i4'") || !strings.Contains(hdr, fmt.Sprintf("'shape': (%d,)", len(allIDs))) || len(raw) != 4*len(allIDs) {
		t.Fatalf("ids header %q, %d bytes for %d ids", hdr, len(raw), len(allIDs))
	}
	for i, id := range allIDs {
		if got := int(int32(binary.LittleEndian.Uint32(raw[4*i:]))); got != id {
			t.Fatalf("id %d: %d, want %d", i, got, id)
		}
	}
	hdr, raw = parseNpy(t, files[OffsetsFile])
	if !strings.Contains(hdr, "'descr': '<i8'") || !strings.Contains(hdr, "'shape': (21,)") || len(raw) != 8*21 {
		t.Fatalf("offsets header %q", hdr)
	}
	hdrL, rawL := parseNpy(t, files[LensFile])
	if !strings.Contains(hdrL, "'descr': '<i4'") || !strings.Contains(hdrL, "'shape': (20,)") {
		t.Fatalf("lens header %q", hdrL)
	}
	var off int64
	for i := 0; i < 20; i++ {
		if got := int64(binary.LittleEndian.Uint64(raw[8*i:])); got != off {
			t.Fatalf("offset %d: %d, want %d", i, got, off)
		}
		l := int(binary.LittleEndian.Uint32(rawL[4*i:]))
		if l != res.Lengths[i] {
			t.Fatalf("len %d: %d, want %d", i, l, res.Lengths[i])
		}
		off += int64(l)
	}
	if got := int64(binary.LittleEndian.Uint64(raw[8*20:])); got != off {
		t.Fatalf("last offset %d, want %d", got, off)
	}

	// Output digests in the manifest match the files.
	for _, d := range m.Outputs {
		if d.Bytes != int64(len(files[d.Path])) {
			t.Errorf("%s: manifest %d bytes, file %d", d.Path, d.Bytes, len(files[d.Path]))
		}
	}
}

func TestBuildByteIdentical(t *testing.T) {
	data := toyData(t)
	root := t.TempDir()
	var runs []map[string][]byte
	for i, workers := range []int{1, 3, 0} {
		opts := toyOptions(data, filepath.Join(root, fmt.Sprint("out", i)))
		opts.Workers = workers
		if _, err := Build(context.Background(), opts, byteTok{}, nil); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, readDir(t, opts.Out))
	}
	for i := 1; i < len(runs); i++ {
		if len(runs[i]) != len(runs[0]) {
			t.Fatalf("run %d: %d files", i, len(runs[i]))
		}
		for name, b := range runs[0] {
			if !bytes.Equal(b, runs[i][name]) {
				t.Errorf("run %d: %s differs", i, name)
			}
		}
	}
	// A different seed changes the selection.
	opts := toyOptions(data, filepath.Join(root, "other"))
	opts.Seed = 6
	if _, err := Build(context.Background(), opts, byteTok{}, nil); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(readDir(t, opts.Out)[ServeFile], runs[0][ServeFile]) {
		t.Error("seed 6 gave the same prompts as seed 5")
	}
}

// assertNoOutput checks that a failed build left nothing in parent.
func assertNoOutput(t *testing.T, parent string) {
	t.Helper()
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left behind: %s", e.Name())
	}
}

func TestBuildFailures(t *testing.T) {
	data := toyData(t)
	writeFiles(t, data, map[string]string{"bad.jsonl": goodV1 + "\n{oops\n"})
	tests := []struct {
		name    string
		mod     func(*BuildOptions)
		wantErr error
		wantMsg string
	}{
		{"n too large", func(o *BuildOptions) { o.N = 81 }, ErrNotEnough, "only 80 records"},
		{"target too high", func(o *BuildOptions) { o.TargetMean = 1e6 }, ErrUnreachable, "above the largest"},
		{"target too low", func(o *BuildOptions) { o.TargetMean = 1 }, ErrUnreachable, "below the smallest"},
		{"missing subset", func(o *BuildOptions) { o.Subsets = []string{"qa", "nope"} }, ErrTemplate, "no template for subset \"nope\""},
		{"missing file", func(o *BuildOptions) {
			o.Subsets = []string{"qa"}
			o.TemplatesDir = filepath.Join(data, "config2")
		}, ErrConfig, "config2"},
		{"malformed line fatal", func(o *BuildOptions) {
			o.Subsets = []string{"bad"}
			o.TemplatesDir = filepath.Join(data, "badcfg")
			o.N, o.TargetMean = 1, 0
		}, ErrMalformed, "bad.jsonl:2:"},
		{"duplicate subset", func(o *BuildOptions) { o.Subsets = []string{"qa", "qa"} }, ErrOptions, "twice"},
		{"max prompt tokens", func(o *BuildOptions) { o.MaxPromptTokens = 100 }, ErrNotEnough, "exceed max length 100 or prompt + output 400"},
		{"no model", func(o *BuildOptions) { o.Model = "" }, ErrOptions, "no model name"},
		{"over budget refused", func(o *BuildOptions) { o.Prompt.AllowOverBudget = true }, ErrOptions, "AllowOverBudget"},
		{"fixed budget over the context", func(o *BuildOptions) { o.Prompt.MaxLen = 390 }, ErrBudget, `subset "qa": truncation budget 390 (policy fixed)`},
		{"longbench policy over the context", func(o *BuildOptions) { o.Prompt.Policy = PolicyLongBench }, ErrBudget, `subset "qa": truncation budget -100 (context 400, max_new_tokens 32, chat template 25, policy longbench) leaves no room`},
		{"band too long for the records", func(o *BuildOptions) { o.TargetMean = 0; o.Buckets = []int{300, 1000}; o.Prompt.ContextLen = 2000 }, ErrNotEnough, "band (300, 1000]: only 0 of 80 records reach 1000 prompt + output tokens before truncation (the longest reaches 546), 20 wanted"},
		{"buckets not ascending", func(o *BuildOptions) { o.TargetMean = 0; o.Buckets = []int{300, 200} }, ErrOptions, "ascending"},
		{"bucket over the context", func(o *BuildOptions) { o.TargetMean = 0; o.Buckets = []int{500} }, ErrOptions, "(0, 400]"},
		{"buckets with a target mean", func(o *BuildOptions) { o.Buckets = []int{300} }, ErrOptions, "no target mean"},
		{"v2 template with v1 records", func(o *BuildOptions) { o.V2Template = "x.txt" }, ErrOptions, "needs LongBench v2"},
	}
	writeFiles(t, data, map[string]string{
		"config2/" + PromptFile: `{}`, // dataset2maxlen.json missing
		"badcfg/" + PromptFile:  `{"bad": "{context}"}`,
		"badcfg/" + MaxLenFile:  `{"bad": 4}`,
	})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			opts := toyOptions(data, filepath.Join(parent, "out"))
			tc.mod(&opts)
			_, err := Build(context.Background(), opts, byteTok{}, nil)
			if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("err = %v, want %v containing %q", err, tc.wantErr, tc.wantMsg)
			}
			assertNoOutput(t, parent)
		})
	}

	// Missing data file (template present) names the path.
	writeFiles(t, data, map[string]string{"badcfg/" + PromptFile: `{"bad": "{context}", "gone": "{context}"}`, "badcfg/" + MaxLenFile: `{"bad": 4, "gone": 4}`})
	parent := t.TempDir()
	opts := BuildOptions{DataDir: data, TemplatesDir: filepath.Join(data, "badcfg"), Subsets: []string{"gone"}, N: 1, Out: filepath.Join(parent, "o"), Model: "toy"}
	if _, err := Build(context.Background(), opts, byteTok{}, nil); !errors.Is(err, ErrMissingSubset) || !strings.Contains(err.Error(), filepath.Join(data, "gone.jsonl")) {
		t.Fatalf("missing file: %v", err)
	}
	assertNoOutput(t, parent)

	// Skipping malformed lines records them in the manifest.
	opts = BuildOptions{DataDir: data, TemplatesDir: filepath.Join(data, "badcfg"), Subsets: []string{"bad"}, N: 1,
		SkipMalformed: true, Out: filepath.Join(parent, "o"), Model: "toy"}
	res, err := Build(context.Background(), opts, byteTok{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Manifest.Skipped) != 1 || !strings.Contains(res.Manifest.Skipped[0], "bad.jsonl:2:") || res.Manifest.Sources[0].Skipped != 1 {
		t.Fatalf("skipped %v", res.Manifest.Skipped)
	}

	// Cancellation.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	parent = t.TempDir()
	if _, err := Build(ctx, toyOptions(data, filepath.Join(parent, "o")), byteTok{}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	assertNoOutput(t, parent)
}

func TestCommitDir(t *testing.T) {
	parent := t.TempDir()
	out := filepath.Join(parent, "out")
	boom := errors.New("boom")
	err := commitDir(out, false, func(tmp string) error {
		if err := os.WriteFile(filepath.Join(tmp, "half"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	assertNoOutput(t, parent)

	write := func(content string) func(string) error {
		return func(tmp string) error {
			// A longbench build: only those are ever replaced.
			os.WriteFile(filepath.Join(tmp, ManifestFile), []byte(`{"format":"`+ManifestFormat+`","outputs":[{"path":"f"}]}`), 0o644)
			return os.WriteFile(filepath.Join(tmp, "f"), []byte(content), 0o644)
		}
	}
	if err := commitDir(out, false, write("one")); err != nil {
		t.Fatal(err)
	}
	if err := commitDir(out, false, write("two")); !errors.Is(err, ErrOutputExists) {
		t.Fatalf("second commit: %v", err)
	}
	// A failed overwrite leaves the old output in place.
	if err := commitDir(out, true, func(string) error { return boom }); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "f")); string(b) != "one" {
		t.Fatalf("after failed overwrite: %q", b)
	}
	if err := commitDir(out, true, write("two")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "f")); string(b) != "two" {
		t.Fatalf("after overwrite: %q", b)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 1 {
		t.Errorf("parent holds %d entries", len(entries))
	}
	// An existing empty directory is fine without overwrite.
	empty := filepath.Join(parent, "empty")
	os.Mkdir(empty, 0o755)
	if err := commitDir(empty, false, write("x")); err != nil {
		t.Fatal(err)
	}
}

// Build on the real sample with its real templates (toy tokenizer).
func TestBuildSample(t *testing.T) {
	dir := sampleDir(t)
	out := filepath.Join(t.TempDir(), "o")
	opts := BuildOptions{DataDir: dir, Subsets: []string{"qasper", "multifieldqa_en", "hotpotqa", "gov_report"},
		N: 2, TargetMean: 21000, Seed: 1, Out: out, Prompt: PromptOptions{NoThinking: true}, Model: "toy"}
	res, err := Build(context.Background(), opts, byteTok{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Manifest
	if len(m.Sources) != 4 || m.Sources[3].SHA256 != "5175937470d12019bd099842a97cedf3f8c99a68d8439fcd85730b68d0a6ce2c" {
		t.Errorf("sources %+v", m.Sources)
	}
	if len(m.Templates) != 2 || m.Templates[0].SHA256 != "56d22ad4f382169c2b8a11ff4c982a4a1bea096c8152b0f0b85b64686b157c30" ||
		m.Templates[1].SHA256 != "72966b3c0933e214591637fb085798c5e687ebff4ddaab5d99bbc31120532022" {
		t.Errorf("templates %+v", m.Templates)
	}
	// With one token per byte, long lines exceed the budget and are cut so
	// that prompt + output is exactly the context (the budget is even for
	// every subset here, so pred.py's halves fill it).
	for _, p := range m.Prompts {
		if p.TotalTokens != p.PromptTokens+p.MaxNewTokens || p.TotalTokens > 40960 {
			t.Errorf("%s %s: %d + %d tokens", p.Subset, p.ID, p.PromptTokens, p.MaxNewTokens)
		}
		if p.Truncated && (p.RawTokens <= 40960-p.MaxNewTokens-toyChat(true) || p.TotalTokens != 40960) {
			t.Errorf("%s %s: raw %d tokens %d + %d", p.Subset, p.ID, p.RawTokens, p.PromptTokens, p.MaxNewTokens)
		}
	}
	if m.Selection.CandidateStats.Max > 40960 || m.Selection.CandidateStats.Count != 9 {
		t.Errorf("candidate stats %+v", m.Selection.CandidateStats)
	}
	if rel := res.Stats.Mean/21000 - 1; rel < -0.02 || rel > 0.02 {
		t.Errorf("mean %.0f", res.Stats.Mean)
	}
}

// Optional: numpy reads the arrays back.
func TestBuildNumpy(t *testing.T) {
	py := testenv.PythonNumpy(t)
	data := toyData(t)
	out := filepath.Join(t.TempDir(), "o")
	res, err := Build(context.Background(), toyOptions(data, out), byteTok{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	script := `import numpy as np, sys
d = sys.argv[1]
ids = np.load(d + "/prompt_ids.npy"); off = np.load(d + "/prompt_offsets.npy"); ln = np.load(d + "/prompt_lens.npy")
assert ids.dtype == np.int32 and off.dtype == np.int64 and ln.dtype == np.int32
assert off[0] == 0 and off[-1] == ids.size and (np.diff(off) == ln).all()
print(" ".join(str(int(x)) for x in ln))`
	b, err := exec.Command(py, "-c", script, out).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	var want []string
	for _, l := range res.Lengths {
		want = append(want, strconv.Itoa(l))
	}
	if got := strings.TrimSpace(string(b)); got != strings.Join(want, " ") {
		t.Fatalf("numpy lengths %q, want %q", got, strings.Join(want, " "))
	}
}
