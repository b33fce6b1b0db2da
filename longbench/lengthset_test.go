package longbench

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/goldset/goldset/internal/testenv"
)

// Budget by construction when re-encoding the truncated text gives more
// tokens than the budget: byteTok decodes half a UTF-8 sequence as U+FFFD
// (3 bytes, 3 tokens), so a cut inside "é" overshoots and the budget must
// be lowered until prompt + output fits.
func TestBuildFitsAfterSeamOvershoot(t *testing.T) {
	cfg := toyConfig(t)
	ctxLen := 42 + 2 + toyChat(false) // budget 42: half 21 cuts an "é"
	p, err := NewPrompter(cfg, byteTok{}, PromptOptions{ContextLen: ctxLen})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := p.Plan("raw", V1)
	if err != nil || plan.MaxLen != 42 {
		t.Fatalf("plan %+v %v", plan, err)
	}
	rec := &Record{Version: V1, Subset: "raw", ID: "e", Line: 1, Context: strings.Repeat("é", 100)}
	got, err := p.Build(rec)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Truncated || got.Total() > ctxLen || got.MaxLen >= plan.MaxLen {
		t.Fatalf("total %d (context %d), budget %d of %d, truncated %v", got.Total(), ctxLen, got.MaxLen, plan.MaxLen, got.Truncated)
	}
	// pred.py's plain cut at the plan's budget overshoots: the loop is needed.
	plain := ApplyChat(TruncateMiddle(byteTok{}, byteTok{}.Encode(rec.Context), plan.MaxLen), false)
	if n := len(byteTok{}.Encode(plain)) + 2; n <= ctxLen {
		t.Fatalf("control: plain truncation fits (%d <= %d); the case tests nothing", n, ctxLen)
	}
	// AllowOverBudget keeps pred.py's result as is (reference reproduction).
	q, _ := NewPrompter(cfg, byteTok{}, PromptOptions{ContextLen: ctxLen, AllowOverBudget: true})
	over, err := q.Build(rec)
	if err != nil || over.Text != plain {
		t.Fatalf("AllowOverBudget changed the prompt: %v", err)
	}
}

func TestPolicies(t *testing.T) {
	cfg := toyConfig(t) // sum: max_new_tokens 16
	tests := []struct {
		opts    PromptOptions
		wantMax int
		wantErr error
	}{
		{PromptOptions{ContextLen: 1000}, 1000 - 16 - toyChat(false), nil},
		{PromptOptions{ContextLen: 1000, Policy: PolicyLongBench}, 500, nil},
		{PromptOptions{ContextLen: 530, Policy: PolicyLongBench}, 30, nil},
		{PromptOptions{ContextLen: 501, Policy: PolicyLongBench}, 0, ErrBudget}, // 1 token left
		{PromptOptions{ContextLen: 1000, MaxLen: 1000 - 16 - toyChat(false)}, 1000 - 16 - toyChat(false), nil},
		{PromptOptions{ContextLen: 1000, MaxLen: 1000 - 16 - toyChat(false) + 1}, 0, ErrBudget},
		{PromptOptions{ContextLen: 1000, MaxLen: 100, Policy: PolicyLongBench}, 0, ErrOptions},
		{PromptOptions{ContextLen: 1000, Policy: "pred"}, 0, ErrOptions},
	}
	for i, tc := range tests {
		p, err := NewPrompter(cfg, byteTok{}, tc.opts)
		var plan SubsetPlan
		if err == nil {
			plan, err = p.Plan("sum", V1)
		}
		if !errors.Is(err, tc.wantErr) || (err == nil && plan.MaxLen != tc.wantMax) {
			t.Errorf("case %d %+v: max_len %d err %v, want %d %v", i, tc.opts, plan.MaxLen, err, tc.wantMax, tc.wantErr)
		}
	}
}

func TestBuildLengthSet(t *testing.T) {
	data := toyData(t)
	opts := toyOptions(data, filepath.Join(t.TempDir(), "o"))
	opts.TargetMean, opts.N, opts.Buckets, opts.Limit = 0, 4, []int{150, 300}, true
	res, err := Build(context.Background(), opts, byteTok{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Manifest
	if m.LengthSets == nil || len(m.LengthSets.Bands) != 3 || len(m.Prompts) != 12 {
		t.Fatalf("length sets %+v, %d prompts", m.LengthSets, len(m.Prompts))
	}
	seen := map[string]bool{}
	for i, p := range m.Prompts {
		band := m.LengthSets.Bands[i/4]
		if p.Band != band.Upper || p.TotalTokens != band.Upper || p.PromptTokens+p.MaxNewTokens != p.TotalTokens {
			t.Errorf("prompt %d %s: %d + %d tokens in band %+v", i, p.CustomID, p.PromptTokens, p.MaxNewTokens, band)
		}
		if !strings.HasSuffix(p.CustomID, "-t"+strconv.Itoa(band.Upper)) || seen[p.CustomID] {
			t.Errorf("custom_id %q", p.CustomID)
		}
		seen[p.CustomID] = true
	}
	last := m.LengthSets.Bands[2]
	if !last.Limit || last.Upper != 400 || last.Lower != 300 || last.Exact != 4 || last.Eligible < 4 {
		t.Errorf("limit band %+v", last)
	}
	// Deterministic, and the seed changes the records drawn.
	opts.Out = filepath.Join(t.TempDir(), "p")
	again, err := Build(context.Background(), opts, byteTok{}, nil)
	if err != nil || again.Manifest.WorkloadDigest != m.WorkloadDigest {
		t.Fatalf("rebuild: %v", err)
	}
	opts.Out, opts.Seed = filepath.Join(t.TempDir(), "q"), opts.Seed+1
	other, err := Build(context.Background(), opts, byteTok{}, nil)
	if err != nil || other.Manifest.WorkloadDigest == m.WorkloadDigest {
		t.Fatalf("another seed: %v", err)
	}
}

func TestDollarTemplate(t *testing.T) {
	tmpl, err := ParseDollarTemplate("0shot.txt", "<text>\n$DOC$\n</text>\nQ: $Q$\n(A) $C_A$\n(B) $C_B$\n(C) $C_C$\n(D) $C_D$\n$Q$")
	if err != nil {
		t.Fatal(err)
	}
	rec := &Record{Version: V2, Context: " \n doc with $Q$ inside\x1f\t", Question: "  why?\u3000", ChoiceA: "a ", ChoiceB: "\u00a0b", ChoiceC: "c", ChoiceD: "\x1cd"}
	got, err := tmpl.FormatRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	// pred.py replaces in order over the whole string: the $Q$ the context
	// brought in is replaced by the question too.
	want := "<text>\ndoc with why? inside\n</text>\nQ: why?\n(A) a\n(B) b\n(C) c\n(D) d\nwhy?"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if err := tmpl.CheckFields(V1); !errors.Is(err, ErrTemplate) {
		t.Errorf("v1 records: %v", err)
	}
	if _, err := ParseDollarTemplate("x", "no document"); !errors.Is(err, ErrTemplate) {
		t.Errorf("template without $DOC$: %v", err)
	}
}

// PyStrip strips exactly the characters Python's str.isspace() accepts.
func TestPyStripMatchesPython(t *testing.T) {
	py := testenv.Python
	if _, err := exec.LookPath(py); err != nil {
		testenv.SkipOrFail(t, "%s not found", py)
	}
	out, err := exec.Command(py, "-c", "print(' '.join(str(c) for c in range(0x110000) if chr(c).isspace()))").Output()
	if err != nil {
		t.Fatal(err)
	}
	pySpace := map[rune]bool{}
	for _, f := range strings.Fields(string(out)) {
		c, _ := strconv.Atoi(f)
		pySpace[rune(c)] = true
	}
	if len(pySpace) < 25 {
		t.Fatalf("python listed %d space characters", len(pySpace))
	}
	for r := range pySpace {
		if r >= 0x10000 {
			t.Fatalf("python space U+%04X outside the range checked", r)
		}
	}
	for r := rune(0); r < 0x10000; r++ {
		if r >= 0xd800 && r < 0xe000 {
			continue
		}
		s := string(r)
		if stripped := PyStrip("x"+s) == "x"; stripped != pySpace[r] {
			t.Errorf("U+%04X: PyStrip strips %v, python isspace %v", r, stripped, pySpace[r])
		}
	}
}

func TestSelectMaxTotal(t *testing.T) {
	lengths := []int{100, 200, 300, 400}
	out := []int{50, 250, 10, 0} // 200 + 250 is over 400; 400 + 0 is exactly at it
	sel, err := Select(lengths, 3, SelectOptions{MaxTotal: 400, Output: out})
	if err != nil || sel.Excluded != 1 || sel.Candidates != 3 || strconvInts(sel.Lengths) != "100 300 400 " {
		t.Fatalf("%+v %v", sel, err)
	}
	if _, err := Select(lengths, 4, SelectOptions{MaxTotal: 400, Output: out}); !errors.Is(err, ErrNotEnough) || !strings.Contains(err.Error(), "exceed prompt + output 400") {
		t.Errorf("too many: %v", err)
	}
	if _, err := Select(lengths, 1, SelectOptions{MaxTotal: 400}); !errors.Is(err, ErrOptions) {
		t.Errorf("MaxTotal without output lengths: %v", err)
	}
}

func strconvInts(v []int) string {
	var b strings.Builder
	for _, x := range v {
		b.WriteString(strconv.Itoa(x) + " ")
	}
	return b.String()
}

// With no prompt taking a chat template there is no chat batch file, and
// the manifest says why.
func TestBuildNoChatHasNoChatBatch(t *testing.T) {
	opts := toyOptions(toyData(t), filepath.Join(t.TempDir(), "o"))
	opts.Prompt.NoChat = true
	res, err := Build(context.Background(), opts, byteTok{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Manifest
	if m.ChatBatch.File != "" || m.ChatBatch.Requests != 0 || len(m.ChatBatch.ExcludedCustomIDs) != 20 || len(m.ChatBatch.ExcludedSubsets) != 2 {
		t.Errorf("chat_batch %+v", m.ChatBatch)
	}
	if _, err := os.Stat(filepath.Join(opts.Out, ChatBatchFile)); !os.IsNotExist(err) {
		t.Errorf("%s written: %v", ChatBatchFile, err)
	}
	for _, f := range m.Files {
		if f.Path == ChatBatchFile {
			t.Errorf("files[] lists %s", ChatBatchFile)
		}
	}
}

// DollarTemplate never panics and equals a naive sequential replacement
// (Python's str.replace chain; a placeholder can survive, e.g. "$$DOC$DOC$"
// with an empty document, exactly as in pred.py).
func FuzzDollarTemplate(f *testing.F) {
	f.Add("<text>\n$DOC$\n</text>\n$Q$ (A) $C_A$ (B) $C_B$ (C) $C_C$ (D) $C_D$", " doc ", "q?", "a", "b", "c", "d")
	f.Add("$DOC$$DOC$$Q$", "$Q$", "\x1f", "", "", "", "")
	f.Fuzz(func(t *testing.T, tmpl, doc, q, a, b, c, d string) {
		dt, err := ParseDollarTemplate("fuzz", tmpl)
		if err != nil {
			if strings.Contains(tmpl, "$DOC$") {
				t.Fatalf("rejected a template with $DOC$: %v", err)
			}
			return
		}
		rec := &Record{Version: V2, Context: doc, Question: q, ChoiceA: a, ChoiceB: b, ChoiceC: c, ChoiceD: d}
		got, err := dt.FormatRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		want := tmpl
		for i, v := range []string{doc, q, a, b, c, d} {
			want = strings.ReplaceAll(want, V2Placeholders[i].Placeholder, PyStrip(v))
		}
		if got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}
