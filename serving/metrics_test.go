package serving

import (
	"math"
	"strconv"
	"testing"
)

// Hand-computed cases, independent of the Python fixture.
func TestMetricsByHand(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"The Eiffel Tower.", "eiffel tower"},
		{"An apple, a day!", "apple day"},
		{"the_answer is a\u00a0b", "theanswer is b"}, // '_' is punctuation; NBSP splits
		{"théa the\x1cend", "théa end"},              // \b is Unicode-aware; U+001C is str.isspace()
		{"İ", "i\u0307"},
	} {
		if got := NormalizeAnswer(c.in); got != c.want {
			t.Errorf("NormalizeAnswer(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// pred {they used bert elmo and gpt2} vs {bert and elmo}: 3 common,
	// p = 3/6, r = 1, f1 = 2/3.
	if got := QAF1("They used BERT, ELMo and GPT-2", "BERT and ELMo"); math.Abs(got-2.0/3) > 1e-15 {
		t.Errorf("QAF1 = %v", got)
	}
	// ref words {costs rose again} (3 distinct), hyp {costs rose} (2): the
	// LCS union is {costs, rose}: r = 2/3, p = 1, f = 2 (2/3) / (5/3 + 1e-8).
	// (A Go constant expression would be exact; Python computes in float64.)
	p, r := 1.0, 2.0/3
	if got, want := RougeL("Costs rose", "Costs rose. Costs rose again."), 2.0*((p*r)/(p+r+1e-8)); got != want || got != 0.7999999952000001 {
		t.Errorf("RougeL = %v, want %v", got, want)
	}
	for _, s := range []string{"", "...", " . "} {
		if got := RougeL(s, "a b"); got != 0 && s != " . " {
			t.Errorf("RougeL(%q) = %v, want 0 (no sentence)", s, got)
		}
	}
	// Python's rouge (make_expected.py's transcription) printed
	// 0.0020161290121170983 for 990 words after "zz" against "zz", and 0.0
	// (RecursionError) for 1000: the walks are 992 and 1002 steps.
	long := func(k int) string {
		s := "zz"
		for i := range k {
			s += " w" + strconv.Itoa(i)
		}
		return s
	}
	if v, walk := rougeL(long(990), "zz"); v != 0.0020161290121170983 || walk != 992 {
		t.Errorf("rougeL 990: %v, walk %d", v, walk)
	}
	if _, walk := rougeL(long(1000), "zz"); walk != 1002 || walk <= rougeRecursionWarn {
		t.Errorf("rougeL 1000: walk %d", walk)
	}
	// "abcd" vs "abed": LCS 3, ratio 6/8 = 0.75 -> 75.
	if got := FuzzRatio("abcd", "abed"); got != 75 {
		t.Errorf("FuzzRatio = %d", got)
	}
	// Python rounds half to even: 2 x LCS / 8 = 0.625 -> 62.5 -> 62.
	if got := FuzzRatio("abcdefgh", "abcdeXYZ"); got != 62 {
		t.Errorf("FuzzRatio half = %d, want 62", got)
	}
	if FuzzRatio("", "") != 100 || FuzzRatio("", "x") != 0 {
		t.Error("FuzzRatio empty cases")
	}
	if got := ClassificationScore("Money amount range", "Money amount range", []string{"Money", "Money amount", "Money amount range"}); got != 0.5 {
		t.Errorf("classification quirk: %v, want 0.5", got)
	}
	if got, ok := RetrievalScore("Paragraph 3 and Paragraph 12", "Paragraph 12", "Paragraph "); !ok || got != 0.5 {
		t.Errorf("retrieval: %v %v", got, ok)
	}
	if _, ok := RetrievalScore("1", "no number", "Paragraph "); ok {
		t.Error("retrieval without a paragraph number must fail as LongBench's IndexError")
	}
	if got := CountScore("\u0667 or 7", "7"); got != 0.5 { // Arabic-Indic 7 is \d, but not "7"
		t.Errorf("CountScore = %v", got)
	}
	for in, want := range map[string]string{"**The correct answer is (C)**": "C", "The correct answer is D.": "D", "The correct answer is (E)": "", "  ": ""} {
		if got := ExtractChoice(in); got != want {
			t.Errorf("ExtractChoice(%q) = %q, want %q", in, got, want)
		}
	}
	if pyRound(0.125, 2) != 0.12 || pyRound(2.675, 2) != 2.67 || pyRound(66.66666, 1) != 66.7 {
		t.Error("pyRound")
	}
}

// npSum against a naive float64 sum: equal below 8 values, close above.
func TestNpSum(t *testing.T) {
	a := make([]float64, 1000)
	naive := 0.0
	for i := range a {
		a[i] = 1 / float64(i+3)
		naive += a[i]
	}
	if npSum(a[:7]) != func() float64 {
		s := 0.0
		for _, v := range a[:7] {
			s += v
		}
		return s
	}() {
		t.Error("npSum below 8 must be the straight sum")
	}
	if got := npSum(a); math.Abs(got-naive) > 1e-12 || got == 0 {
		t.Errorf("npSum %v, naive %v", got, naive)
	}
	if !math.IsNaN(npMean(nil)) {
		t.Error("np.mean of nothing is NaN")
	}
}

func FuzzParseGenerations(f *testing.F) {
	f.Add([]byte(`{"id":"x","custom_id":"a","response":{"status_code":200,"body":{"choices":[{"message":{"content":"hi"}}]}},"error":null}`))
	f.Add([]byte(`{"custom_id":"a","response":null,"error":{"message":"x"}}` + "\n" + `{"custom_id":"b","response":{"status_code":500}}`))
	f.Add([]byte(`{"completed":1,"failed":0,"num_prompts":1,"input_lens":[3],"output_lens":[2],"generated_texts":["x"],"errors":[""]}`))
	f.Add([]byte(`{"tool":"t","requests":[{"custom_id":"a","prompt_tokens":1,"output_tokens":1,"text":"x","output_token_ids":[1]}],"elapsed_s":1,"num_requests":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := ParseGenerations(b, -1)
		if err != nil {
			return
		}
		if g.CustomIDs != nil && len(g.CustomIDs) != len(g.Texts) || g.Errors != nil && len(g.Errors) != len(g.Texts) {
			t.Fatalf("ragged generations: %d texts, %d ids, %d errors", len(g.Texts), len(g.CustomIDs), len(g.Errors))
		}
	})
}

func FuzzMetrics(f *testing.F) {
	f.Add("The Eiffel Tower.", "the eiffel tower")
	f.Add("Paragraph 12\n段落5", "段落5")
	f.Add("", "...")
	f.Fuzz(func(t *testing.T, pred, truth string) {
		for name, v := range map[string]float64{"qa": QAF1(pred, truth), "rouge": RougeL(pred, truth), "count": CountScore(pred, truth),
			"code": CodeSimScore(pred, truth), "class": ClassificationScore(pred, truth, []string{truth, "x"})} {
			if math.IsNaN(v) || v < 0 || v > 1+1e-9 {
				t.Fatalf("%s(%q, %q) = %v", name, pred, truth, v)
			}
		}
		if pred == truth && FuzzRatio(pred, truth) != 100 {
			t.Fatal("equal strings must give 100")
		}
		ExtractChoice(pred)
	})
}
