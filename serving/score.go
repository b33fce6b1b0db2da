package serving

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/goldset/goldset/internal/safefile"
	"github.com/goldset/goldset/longbench"
)

// ErrScore: a run's texts cannot be matched to the workload or scored.
var ErrScore = errors.New("serving: cannot score")

// Truth is what LongBench scores one prompt against, read from its record.
type Truth struct {
	Subset     string
	Answers    []string // v1 answers; v2: the one letter
	AllClasses []string // v1 all_classes
	Length     float64  // v1 "length" (words); NaN when absent
	Difficulty string   // v2 easy/hard
	LengthTag  string   // v2 short/medium/long
}

// LoadTruths reads, for every prompt of w, its LongBench record from
// dataDir/<subset>.jsonl at the manifest's line, checks the record's _id and,
// where the manifest lists the source's sha256, the file's.
func LoadTruths(ctx context.Context, w *Workload, dataDir string) ([]Truth, []string, error) {
	v := longbench.V1
	if w.Version == "v2" {
		v = longbench.V2
	}
	want := map[string]map[int][]int{} // subset -> line -> prompt indices
	var order []string
	for i, p := range w.Prompts {
		if p.Subset == "" || p.Line <= 0 {
			return nil, nil, fmt.Errorf("%w: prompts[%d] (%q) has no subset/line: the manifest predates records' provenance", ErrScore, i, p.CustomID)
		}
		if want[p.Subset] == nil {
			want[p.Subset] = map[int][]int{}
			order = append(order, p.Subset)
		}
		want[p.Subset][p.Line] = append(want[p.Subset][p.Line], i)
	}
	sums := map[string]string{}
	for _, s := range w.Sources {
		sums[s.Subset] = s.SHA256
	}
	truths := make([]Truth, len(w.Prompts))
	found := make([]bool, len(w.Prompts))
	var notes []string
	for _, subset := range order {
		path := longbench.SubsetPath(dataDir, subset)
		info, err := longbench.ReadFile(ctx, path, subset, longbench.ReadOptions{Version: v}, func(r *longbench.Record) error {
			for _, i := range want[subset][r.Line] {
				p := w.Prompts[i]
				if r.ID != p.ID {
					return fmt.Errorf("%w: %s:%d has _id %q, the manifest's prompt %q wants %q", ErrScore, path, r.Line, r.ID, p.CustomID, p.ID)
				}
				truths[i] = truthOf(r)
				found[i] = true
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		switch want := sums[subset]; {
		case want == "":
			notes = append(notes, fmt.Sprintf("%s: the manifest lists no sha256 for it; records matched by line and _id only", filepath.Base(path)))
		case want != info.SHA256:
			return nil, nil, fmt.Errorf("%w: %s: sha256 %s, the workload was built from %s", ErrScore, path, info.SHA256, want)
		}
	}
	for i, ok := range found {
		if !ok {
			p := w.Prompts[i]
			return nil, nil, fmt.Errorf("%w: %s has no line %d (prompt %q)", ErrScore, longbench.SubsetPath(dataDir, p.Subset), p.Line, p.CustomID)
		}
	}
	return truths, notes, nil
}

func truthOf(r *longbench.Record) Truth {
	t := Truth{Subset: r.Subset, Length: math.NaN()}
	if r.Version == longbench.V2 {
		t.Answers = []string{r.Answer}
		t.Difficulty, t.LengthTag = r.Difficulty, r.LengthClass
		return t
	}
	t.Answers, t.AllClasses = r.Answers, r.AllClasses
	if r.Length != "" {
		if f, err := strconv.ParseFloat(r.Length.String(), 64); err == nil {
			t.Length = f
		}
	}
	return t
}

// RequestScore is one prompt's score in [0, 1] (v2: 1 when the extracted
// choice is the answer).
type RequestScore struct {
	CustomID string `json:"custom_id"`
	Subset   string `json:"subset"`
	Index    int    `json:"index"`  // workload prompt index
	Ran      bool   `json:"ran"`    // the result has this prompt
	Failed   bool   `json:"failed"` // the request failed (scored on its empty text)
	// Skipped: v2 output "" (pred.py does `if output == '': continue`, so
	// LongBench leaves the record out of its accuracy).
	Skipped bool    `json:"skipped,omitempty"`
	Score   float64 `json:"score"`
	Choice  string  `json:"choice,omitempty"` // v2's extracted letter
}

// BucketScore is a score over one length (or difficulty) bucket.
type BucketScore struct {
	Bucket string `json:"bucket"`
	N      int    `json:"n"`
	Score  Num    `json:"score"` // null when the bucket is empty (LongBench: NaN or ZeroDivisionError)
}

// SubsetScore is LongBench's number for one subset.
type SubsetScore struct {
	Subset      string        `json:"subset"`
	Metric      Metric        `json:"metric"`
	N           int           `json:"n"` // prompts scored
	Score       Num           `json:"score"`
	Unsupported string        `json:"unsupported,omitempty"`
	Notes       []string      `json:"notes,omitempty"`
	Buckets     []BucketScore `json:"buckets"`
	idx         []int         // prompt indices, workload order
}

// ScoreReport is Score's answer for one run.
type ScoreReport struct {
	Result   string         `json:"result"`
	Format   Format         `json:"format"`
	Label    string         `json:"label"`
	Workload string         `json:"workload"`
	Digest   string         `json:"workload_digest"`
	Version  string         `json:"longbench_version"`
	Matched  string         `json:"matched_by"`
	Ran      int            `json:"ran"`
	Failed   int            `json:"failed"`
	Subsets  []SubsetScore  `json:"subsets"`
	Overall  Num            `json:"overall"` // mean of the supported subsets' scores
	Requests []RequestScore `json:"requests"`
	Notes    []string       `json:"notes"`
	entry    []int          // workload prompt of each result entry
}

// match maps each result entry to a workload prompt: by custom_id when the
// file names them, else in order (N entries), else by the prompt length
// when the producer shuffles and every prompt length is distinct.
func match(w *Workload, g *Generations) ([]int, string, error) {
	inputLens := g.InputLens
	n := len(g.Texts)
	out := make([]int, n)
	switch {
	case g.CustomIDs != nil:
		pos := map[string]int{}
		for i, p := range w.Prompts {
			pos[p.CustomID] = i
		}
		seen := map[int]bool{}
		for k, id := range g.CustomIDs {
			i, ok := pos[id]
			if !ok {
				return nil, "", fmt.Errorf("%w: entry %d: custom_id %q is not in the workload", ErrScore, k, id)
			}
			if seen[i] {
				return nil, "", fmt.Errorf("%w: entry %d: custom_id %q appears twice", ErrScore, k, id)
			}
			seen[i], out[k] = true, i
		}
		return out, "custom_id", nil
	case !g.Shuffled:
		if n != w.N() {
			return nil, "", fmt.Errorf("%w: %d generated texts for %d prompts and no custom_id to match them (run with --disable-shuffle and no oversampling; see serving check)", ErrScore, n, w.N())
		}
		for k := range out {
			out[k] = k
		}
		return out, "order (the result names no requests; serving check proves the order)", nil
	}
	byLen := map[int]int{}
	for i, p := range w.Prompts {
		if _, dup := byLen[p.PromptTokens]; dup {
			return nil, "", fmt.Errorf("%w: %s reorders requests and names none, and two prompts have %d tokens: texts cannot be matched to prompts", ErrScore, g.Format, p.PromptTokens)
		}
		byLen[p.PromptTokens] = i
	}
	if len(inputLens) != n {
		return nil, "", fmt.Errorf("%w: %s reorders requests and records no input_lens to match them by", ErrScore, g.Format)
	}
	seen := map[int]bool{}
	for k, l := range inputLens {
		i, ok := byLen[l]
		if !ok || seen[i] {
			return nil, "", fmt.Errorf("%w: entry %d: input length %d matches no unmatched prompt", ErrScore, k, l)
		}
		seen[i], out[k] = true, i
	}
	return out, "prompt length (the producer shuffles; every prompt length in the workload is distinct)", nil
}

// Score scores one run's texts against the workload's LongBench answers as
// LongBench's eval.py (v1) and result.py (v2) do; see doc.go "Score".
func Score(w *Workload, truths []Truth, g *Generations) (*ScoreReport, error) {
	if len(truths) != w.N() {
		return nil, fmt.Errorf("%w: %d truths for %d prompts", ErrScore, len(truths), w.N())
	}
	idx, how, err := match(w, g)
	if err != nil {
		return nil, err
	}
	rep := &ScoreReport{Result: g.Path, Format: g.Format, Label: g.Label, Workload: w.Dir, Digest: w.Digest, Version: w.Version,
		Matched: how, Subsets: []SubsetScore{}, Requests: make([]RequestScore, w.N()), Notes: []string{}, entry: idx}
	for i, p := range w.Prompts {
		rep.Requests[i] = RequestScore{CustomID: p.CustomID, Subset: p.Subset, Index: i}
	}
	text := make([]string, w.N())
	for k, i := range idx {
		rep.Requests[i].Ran = true
		rep.Requests[i].Failed = g.failed(k)
		text[i] = g.Texts[k]
		rep.Ran++
		if g.failed(k) {
			rep.Failed++
		}
	}
	if rep.Failed > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d failed requests are scored on the text they returned (usually empty)", rep.Failed))
	}
	think := 0
	for _, t := range g.Texts {
		if strings.Contains(t, "<think>") || strings.Contains(t, "</think>") {
			think++
		}
	}
	if think > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d texts hold a Qwen3 <think> block, which LongBench's metrics score as answer text (build the workload with --no-thinking for accuracy runs)", think))
	}
	if miss := w.N() - rep.Ran; miss > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d prompts are not in the result and not scored (e.g. run-batch's batch.chat.jsonl leaves out the no-chat subsets)", miss))
	}
	pos := map[string]int{}
	for i, t := range truths {
		if !rep.Requests[i].Ran {
			continue
		}
		k, ok := pos[t.Subset]
		if !ok {
			k = len(rep.Subsets)
			pos[t.Subset] = k
			rep.Subsets = append(rep.Subsets, SubsetScore{Subset: t.Subset, Buckets: []BucketScore{}})
		}
		rep.Subsets[k].idx = append(rep.Subsets[k].idx, i)
	}
	var sum float64
	var supported int
	for k := range rep.Subsets {
		s := &rep.Subsets[k]
		if err := scoreSubset(s, w.Version == "v2", truths, text, rep.Requests); err != nil {
			return nil, err
		}
		if s.Unsupported == "" {
			sum += float64(s.Score)
			supported++
		}
	}
	rep.Overall = nan
	if supported > 0 {
		rep.Overall = Num(pyRound(sum/float64(supported), 2))
	}
	return rep, nil
}

func scoreSubset(s *SubsetScore, v2 bool, truths []Truth, text []string, reqs []RequestScore) error {
	s.N = len(s.idx)
	if v2 {
		s.Metric = MetricMultipleChoice
		// result.py: acc = int(pred == answer); round(100 * sum / n, 1) for
		// the whole set, easy/hard and short/medium/long (anything else
		// counts as long).
		type acc struct{ n, ok int }
		var all acc
		b := map[string]*acc{"easy": {}, "hard": {}, "short": {}, "medium": {}, "long": {}}
		skipped := 0
		for _, i := range s.idx {
			if text[i] == "" {
				reqs[i].Skipped = true
				skipped++
				continue
			}
			c := ExtractChoice(text[i])
			ok := 0
			if c != "" && c == truths[i].Answers[0] {
				ok = 1
			}
			reqs[i].Choice, reqs[i].Score = c, float64(ok)
			all.n, all.ok = all.n+1, all.ok+ok
			d := "hard"
			if truths[i].Difficulty == "easy" {
				d = "easy"
			}
			l := "long"
			if t := truths[i].LengthTag; t == "short" || t == "medium" {
				l = t
			}
			for _, k := range []string{d, l} {
				b[k].n++
				b[k].ok += ok
			}
		}
		pct := func(a acc) Num {
			if a.n == 0 {
				return nan
			}
			return Num(pyRound(100*float64(a.ok)/float64(a.n), 1))
		}
		s.Score = pct(all)
		s.N -= skipped
		for _, k := range []string{"easy", "hard", "short", "medium", "long"} {
			s.Buckets = append(s.Buckets, BucketScore{Bucket: k, N: b[k].n, Score: pct(*b[k])})
		}
		return nil
	}
	m, ok := MetricFor(s.Subset)
	if !ok {
		s.Unsupported = "not a LongBench v1 dataset (eval.py's dataset2metric has no metric for it)"
		s.Score = nan
		return nil
	}
	s.Metric = m
	if why, bad := unsupportedMetrics[m]; bad {
		s.Unsupported, s.Score = why, nan
		return nil
	}
	base := baseSubset(s.Subset)
	total := 0.0
	buckets := map[string][]float64{}
	deep, huge := 0, 0
	for _, i := range s.idx {
		pred := text[i]
		if firstLineSubsets[base] {
			pred = predFirstLine(pred)
		}
		score := 0.0
		for _, gt := range truths[i].Answers {
			if m == MetricRouge {
				v, walk := rougeL(pred, gt)
				switch {
				case walk < 0:
					huge++
				case walk > rougeRecursionWarn:
					deep++
				}
				score = math.Max(score, v)
				continue
			}
			v, err := metricScore(m, pred, gt, truths[i].AllClasses)
			if err != nil {
				return fmt.Errorf("%w: %s prompt %q: %v", ErrScore, s.Subset, reqs[i].CustomID, err)
			}
			score = math.Max(score, v)
		}
		reqs[i].Score = score
		total += score
		// scorer_e's buckets on the record's "length" (words).
		l := truths[i].Length
		switch {
		case math.IsNaN(l):
		case l < 4000:
			buckets["0-4k"] = append(buckets["0-4k"], score)
		case l < 8000:
			buckets["4-8k"] = append(buckets["4-8k"], score)
		default:
			buckets["8k+"] = append(buckets["8k+"], score)
		}
	}
	s.Score = Num(pyRound(100*total/float64(s.N), 2))
	if deep > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("%d (prediction, answer) pairs need an LCS walk over %d steps: the rouge package reconstructs it recursively and LongBench (Python's recursion limit 1000, bare except) would likely score them 0.0; goldset scores the LCS", deep, rougeRecursionWarn))
	}
	if huge > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("%d (prediction, answer) pairs have a sentence pair over %d LCS cells and were scored 0 (LongBench's rouge would fail on them too)", huge, maxRougeCells))
	}
	for _, k := range []string{"0-4k", "4-8k", "8k+"} {
		v := buckets[k]
		bs := BucketScore{Bucket: k, N: len(v), Score: nan}
		if len(v) > 0 {
			// round(100 * np.mean(x), 2) on an np.float64 is numpy's round:
			// rint(y * 100) / 100.
			bs.Score = Num(math.RoundToEven(100*npMean(v)*100) / 100)
		}
		s.Buckets = append(s.Buckets, bs)
	}
	return nil
}

// rougeRecursionWarn is the LCS walk above which LongBench's rouge is
// likely to hit Python's recursion limit (1000 frames, some used by the
// callers).
const rougeRecursionWarn = 950

// predFirstLine is prediction.lstrip('\n').split('\n')[0].
func predFirstLine(s string) string {
	for len(s) > 0 && s[0] == '\n' {
		s = s[1:]
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}

func metricScore(m Metric, pred, gt string, allClasses []string) (float64, error) {
	switch m {
	case MetricQAF1:
		return QAF1(pred, gt), nil
	case MetricRouge:
		return RougeL(pred, gt), nil
	case MetricClassify:
		return ClassificationScore(pred, gt, allClasses), nil
	case MetricRetrieval, MetricRetrievalZh:
		prefix := "Paragraph "
		if m == MetricRetrievalZh {
			prefix = "段落"
		}
		v, ok := RetrievalScore(pred, gt, prefix)
		if !ok {
			return 0, fmt.Errorf("answer %q has no %q<number> (LongBench raises IndexError)", gt, prefix)
		}
		return v, nil
	case MetricCount:
		return CountScore(pred, gt), nil
	case MetricCodeSim:
		return CodeSimScore(pred, gt), nil
	}
	return 0, fmt.Errorf("metric %s not implemented", m)
}

// ScoreRun reads a result's texts and scores them (see Score); dataDir
// holds the LongBench files (default: the manifest's data_dir).
func ScoreRun(ctx context.Context, w *Workload, dataDir, result string, run int) (*ScoreReport, *Generations, error) {
	g, err := ReadGenerations(result, run)
	if err != nil {
		return nil, nil, err
	}
	if dataDir == "" {
		// longbench build records --data as given: relative to where it ran,
		// else (a moved workload) to the manifest's directory.
		dataDir = w.DataDir
		if _, err := os.Stat(dataDir); err != nil && !filepath.IsAbs(dataDir) && w.Dir != "" {
			if _, err2 := os.Stat(filepath.Join(w.Dir, dataDir)); err2 == nil {
				dataDir = filepath.Join(w.Dir, dataDir)
			}
		}
		if dataDir == "" {
			return nil, nil, fmt.Errorf("%w: the manifest records no data_dir; give the LongBench data directory (--data)", ErrScore)
		}
	}
	// A FIFO or file in place of the directory is named as such, not as a
	// missing subset file inside it.
	if err := safefile.Dir(dataDir); err != nil {
		return nil, nil, fmt.Errorf("%w: data: %w", ErrScore, err)
	}
	truths, notes, err := LoadTruths(ctx, w, dataDir)
	if err != nil {
		return nil, nil, err
	}
	rep, err := Score(w, truths, g)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", result, err)
	}
	rep.Notes = append(rep.Notes, notes...)
	return rep, g, nil
}
