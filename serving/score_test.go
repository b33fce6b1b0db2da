package serving

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

const scoreDir = "testdata/score"

func loadScore(t *testing.T, workload, data, result string) (*ScoreReport, *Generations, *Workload) {
	t.Helper()
	w, err := ReadWorkload(filepath.Join(scoreDir, workload))
	if err != nil {
		t.Fatal(err)
	}
	rep, g, err := ScoreRun(context.Background(), w, filepath.Join(scoreDir, data), filepath.Join(scoreDir, result), -1)
	if err != nil {
		t.Fatal(err)
	}
	return rep, g, w
}

// expected.json is printed by make_expected.py: LongBench's own scoring code
// (metrics.py, eval.py, v2 pred.py/result.py, rouge 1.0.1, fuzzywuzzy with
// python-Levenshtein, numpy).
func readExpected(t *testing.T) map[string]map[string]json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(scoreDir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func sameNum(got Num, want *float64) bool {
	if want == nil {
		return !got.Known()
	}
	return got.Known() && float64(got) == *want
}

func TestScoreMatchesLongBenchV1(t *testing.T) {
	exp := readExpected(t)
	for _, run := range []string{"dense.json", "sparse.jsonl"} {
		rep, _, _ := loadScore(t, "workload", "data", run)
		if len(rep.Subsets) != len(exp[run]) {
			t.Fatalf("%s: %d subsets scored, LongBench %d", run, len(rep.Subsets), len(exp[run]))
		}
		for _, s := range rep.Subsets {
			var want struct {
				Score float64             `json:"score"`
				E     map[string]*float64 `json:"e"`
			}
			if err := json.Unmarshal(exp[run][s.Subset], &want); err != nil {
				t.Fatalf("%s %s: %v", run, s.Subset, err)
			}
			if s.Subset == "multifieldqa_zh" {
				// jieba-tokenised: reported unsupported, never a number.
				if s.Unsupported == "" || s.Score.Known() {
					t.Errorf("%s %s: want unsupported, got score %v", run, s.Subset, s.Score)
				}
				continue
			}
			if s.Unsupported != "" || float64(s.Score) != want.Score {
				t.Errorf("%s %s: score %v (unsupported %q), LongBench %v", run, s.Subset, s.Score, s.Unsupported, want.Score)
			}
			for _, b := range s.Buckets {
				if !sameNum(b.Score, want.E[b.Bucket]) {
					t.Errorf("%s %s bucket %s: %v, LongBench-E %v", run, s.Subset, b.Bucket, b.Score, want.E[b.Bucket])
				}
			}
		}
	}
}

func TestScoreMatchesLongBenchV2(t *testing.T) {
	exp := readExpected(t)
	for _, run := range []string{"v2-dense.json", "v2-sparse.json"} {
		rep, _, _ := loadScore(t, "workload-v2", "data-v2", run)
		var want map[string]*float64
		if err := json.Unmarshal(exp[run]["longbench_v2"], &want); err != nil {
			t.Fatal(err)
		}
		var preds []*string
		json.Unmarshal(exp[run]["preds"], &preds)
		if len(rep.Subsets) != 1 {
			t.Fatalf("%s: %d subsets", run, len(rep.Subsets))
		}
		s := rep.Subsets[0]
		if !sameNum(s.Score, want["overall"]) {
			t.Errorf("%s: overall %v, LongBench %v", run, s.Score, *want["overall"])
		}
		for _, b := range s.Buckets {
			if !sameNum(b.Score, want[b.Bucket]) {
				t.Errorf("%s %s: %v, LongBench %v", run, b.Bucket, b.Score, want[b.Bucket])
			}
		}
		var got []string
		for _, r := range rep.Requests {
			if !r.Skipped {
				got = append(got, r.Choice)
			}
		}
		if len(got) != len(preds) {
			t.Fatalf("%s: %d predictions kept, LongBench %d", run, len(got), len(preds))
		}
		for i, p := range preds {
			w := ""
			if p != nil {
				w = *p
			}
			if got[i] != w {
				t.Errorf("%s pred %d: %q, LongBench %q", run, i, got[i], w)
			}
		}
	}
}
