package serving

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// LongBench v1's metrics (THUDM/LongBench metrics.py @
// f6227eb7a25cacbd96310aea2c59af003f8d8925), each a Go transcription of the
// Python function of the same name, and v2's answer extraction (pred.py @
// c5ea10bcd06285223c58dfed76bbc92d22273709). Python semantics kept: str
// regexes are Unicode-aware (\b, \w, \d), str.split() splits on str.isspace(),
// `in` is a code-point substring test. See doc.go "Score" for the quirks
// reproduced on purpose.

// Metric names a LongBench v1 scoring function.
type Metric string

const (
	MetricQAF1           Metric = "qa_f1_score"
	MetricQAF1Zh         Metric = "qa_f1_zh_score" // jieba: unsupported
	MetricRouge          Metric = "rouge_score"
	MetricRougeZh        Metric = "rouge_zh_score" // jieba: unsupported
	MetricClassify       Metric = "classification_score"
	MetricRetrieval      Metric = "retrieval_score"
	MetricRetrievalZh    Metric = "retrieval_zh_score"
	MetricCount          Metric = "count_score"
	MetricCodeSim        Metric = "code_sim_score"
	MetricMultipleChoice Metric = "longbench_v2_choice" // v2: extract_answer(response) == answer
)

// dataset2metric is eval.py's table (LongBench/eval.py @
// 072a5a739b05ab3c98ff1ea922c5293ebe317b75).
var dataset2metric = map[string]Metric{
	"narrativeqa": MetricQAF1, "qasper": MetricQAF1, "multifieldqa_en": MetricQAF1, "multifieldqa_zh": MetricQAF1Zh,
	"hotpotqa": MetricQAF1, "2wikimqa": MetricQAF1, "musique": MetricQAF1, "dureader": MetricRougeZh,
	"gov_report": MetricRouge, "qmsum": MetricRouge, "multi_news": MetricRouge, "vcsum": MetricRougeZh,
	"trec": MetricClassify, "triviaqa": MetricQAF1, "samsum": MetricRouge, "lsht": MetricClassify,
	"passage_retrieval_en": MetricRetrieval, "passage_count": MetricCount, "passage_retrieval_zh": MetricRetrievalZh,
	"lcc": MetricCodeSim, "repobench-p": MetricCodeSim,
}

// firstLineSubsets are eval.py's datasets whose prediction is cut to its
// first line: prediction.lstrip('\n').split('\n')[0].
var firstLineSubsets = map[string]bool{"trec": true, "triviaqa": true, "samsum": true, "lsht": true}

// unsupportedMetrics need jieba's Chinese word segmentation, which has no Go
// port here; their subsets are reported as unsupported, never scored 0.
var unsupportedMetrics = map[Metric]string{
	MetricQAF1Zh:  "qa_f1_zh_score tokenises with jieba.cut (Chinese word segmentation), not implemented in goldset",
	MetricRougeZh: "rouge_zh_score tokenises with jieba.cut (Chinese word segmentation), not implemented in goldset",
}

// MetricFor returns the metric of a LongBench v1 subset; a LongBench-E subset
// "<task>_e" uses "<task>"'s (pred.py writes pred_e/<task>.jsonl).
func MetricFor(subset string) (Metric, bool) {
	if m, ok := dataset2metric[subset]; ok {
		return m, true
	}
	m, ok := dataset2metric[strings.TrimSuffix(subset, "_e")]
	return m, ok
}

func baseSubset(subset string) string {
	if _, ok := dataset2metric[subset]; ok {
		return subset
	}
	return strings.TrimSuffix(subset, "_e")
}

// pyIsSpace is Python's str.isspace(): Go's unicode.IsSpace plus U+001C..U+001F.
func pyIsSpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

// pyIsWord is Python re's \w for str patterns: str.isalnum() or '_'.
func pyIsWord(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }

// pySplit is Python's str.split() with no argument.
func pySplit(s string) []string { return strings.FieldsFunc(s, pyIsSpace) }

// pyLower is Python's str.lower(); Go's ToLower uses the simple case mapping,
// which differs from Python's for U+0130 (İ -> "i̇", handled here) and for a
// word-final capital sigma (Python writes ς, Go σ; not handled).
func pyLower(s string) string {
	if !strings.ContainsRune(s, 'İ') {
		return strings.ToLower(s)
	}
	return strings.ToLower(strings.ReplaceAll(s, "İ", "i\u0307"))
}

// asciiPunct is Python's string.punctuation.
const asciiPunct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// NormalizeAnswer is metrics.py's normalize_answer: lower, remove
// string.punctuation, replace \b(a|an|the)\b by a space, collapse whitespace.
func NormalizeAnswer(s string) string {
	s = pyLower(s)
	s = strings.Map(func(r rune) rune {
		if r < 128 && strings.ContainsRune(asciiPunct, r) {
			return -1
		}
		return r
	}, s)
	// \b(a|an|the)\b matches exactly a maximal run of word characters equal
	// to one of the articles (the alternatives are all word characters).
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !pyIsWord(r) {
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		j := i
		for j < len(s) {
			r2, n2 := utf8.DecodeRuneInString(s[j:])
			if !pyIsWord(r2) {
				break
			}
			j += n2
		}
		switch w := s[i:j]; w {
		case "a", "an", "the":
			b.WriteByte(' ')
		default:
			b.WriteString(w)
		}
		i = j
	}
	return strings.Join(pySplit(b.String()), " ")
}

// f1Tokens is metrics.py's f1_score over token lists (Counter intersection).
func f1Tokens(pred, truth []string) float64 {
	counts := map[string]int{}
	for _, t := range truth {
		counts[t]++
	}
	same := 0
	for _, t := range pred {
		if counts[t] > 0 {
			counts[t]--
			same++
		}
	}
	if same == 0 {
		return 0
	}
	precision := 1.0 * float64(same) / float64(len(pred))
	recall := 1.0 * float64(same) / float64(len(truth))
	return (2 * precision * recall) / (precision + recall)
}

// QAF1 is qa_f1_score: token F1 of the normalized answers.
func QAF1(pred, truth string) float64 {
	return f1Tokens(pySplit(NormalizeAnswer(pred)), pySplit(NormalizeAnswer(truth)))
}

// pyDigitRuns is re.findall(r"\d+", s) for a str (\d is any Unicode Nd).
func pyDigitRuns(s string) []string {
	var out []string
	start := -1
	for i, r := range s {
		if unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, s[start:i])
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// CountScore is count_score: the share of the numbers in the prediction
// that equal the answer.
func CountScore(pred, truth string) float64 {
	nums := pyDigitRuns(pred)
	right := 0
	for _, n := range nums {
		if n == truth {
			right++
		}
	}
	if len(nums) == 0 {
		return 0
	}
	return float64(right) / float64(len(nums))
}

// retrievalID is re.findall(pattern, truth)[0]; LongBench raises IndexError
// when the answer has no paragraph number, reported here as ok == false.
func retrievalID(truth, prefix string) (string, bool) {
	for i := 0; ; {
		k := strings.Index(truth[i:], prefix)
		if k < 0 {
			return "", false
		}
		rest := truth[i+k+len(prefix):]
		n := strings.IndexFunc(rest, func(r rune) bool { return !unicode.IsDigit(r) })
		if n < 0 {
			n = len(rest)
		}
		if n > 0 {
			return rest[:n], true // the digit run right after the prefix
		}
		i += k + len(prefix)
	}
}

// RetrievalScore is retrieval_score (prefix "Paragraph ") and
// retrieval_zh_score (prefix "段落").
func RetrievalScore(pred, truth, prefix string) (float64, bool) {
	id, ok := retrievalID(truth, prefix)
	if !ok {
		return 0, false
	}
	return CountScore(pred, id), true
}

// ClassificationScore is classification_score as written, including its two
// quirks: the list is mutated while iterated (an element after a removed one
// is skipped), and `em_match_list != 0` is always true, so the difflib
// fallback never runs and a prediction naming no class scores 0.
func ClassificationScore(pred, truth string, allClasses []string) float64 {
	var em []string
	for _, c := range allClasses {
		if strings.Contains(pred, c) {
			em = append(em, c)
		}
	}
	// Python's list iterator: an index checked against the current length.
	for i := 0; i < len(em); i++ {
		t := em[i]
		if strings.Contains(truth, t) && t != truth {
			for k := range em { // list.remove: the first equal element
				if em[k] == t {
					em = append(em[:k], em[k+1:]...)
					break
				}
			}
		}
	}
	for _, t := range em {
		if t == truth {
			return 1.0 / float64(len(em))
		}
	}
	return 0
}

// CodeSimScore is code_sim_score: the first line of the prediction (after
// leading newlines) holding none of '`', '#', "//", compared with fuzzywuzzy
// fuzz.ratio / 100 with the python-Levenshtein backend.
func CodeSimScore(pred, truth string) float64 {
	line := ""
	for _, l := range strings.Split(strings.TrimLeft(pred, "\n"), "\n") {
		if !strings.Contains(l, "`") && !strings.Contains(l, "#") && !strings.Contains(l, "//") {
			line = l
			break
		}
	}
	return float64(FuzzRatio(line, truth)) / 100
}

// FuzzRatio is fuzzywuzzy 0.18.0's fuzz.ratio with python-Levenshtein:
// 100 for equal strings, 0 when either is empty, else
// int(round(100 * Levenshtein.ratio(a, b))), where ratio = (lensum - d) /
// lensum over code points and d is the Levenshtein distance with substitution
// cost 2 (lensum - d = 2 x the longest common subsequence).
func FuzzRatio(a, b string) int {
	if a == b {
		return 100
	}
	ra, rb := []rune(a), []rune(b)
	if len(ra) == 0 || len(rb) == 0 {
		return 0
	}
	lensum := len(ra) + len(rb)
	d := lensum - 2*lcsLen(ra, rb)
	ratio := float64(lensum-d) / float64(lensum)
	return int(math.RoundToEven(100 * ratio))
}

// lcsLen is the longest common subsequence length, two rows.
func lcsLen[T comparable](x, y []T) int {
	prev, cur := make([]int, len(y)+1), make([]int, len(y)+1)
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			if x[i-1] == y[j-1] {
				cur[j] = prev[j-1] + 1
			} else {
				cur[j] = max(prev[j], cur[j-1])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(y)]
}

// rougeSentences is rouge 1.0.1's sentence split:
// [" ".join(_.split()) for _ in text.split(".") if len(_) > 0].
func rougeSentences(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ".") {
		if len(p) > 0 {
			out = append(out, strings.Join(pySplit(p), " "))
		}
	}
	return out
}

func rougeWords(sentences []string) []string {
	var w []string
	for _, s := range sentences {
		w = append(w, strings.Split(s, " ")...)
	}
	return w
}

// RougeL is metrics.py's rouge_score: Rouge().get_scores([pred], [truth],
// avg=True)["rouge-l"]["f"] of the `rouge` package 1.0.1 (pltrdy/rouge
// rouge/rouge.py @ 53a6fc59474648d95c1a45a1f660d15eafcdebb6,
// rouge/rouge_score.py @ 12ed0ade0350fbd211e73b8c524b09e1266c598f):
// summary-level ROUGE-L with exclusive (set) n-grams: m and n count distinct
// words, the LCS of each (reference, hypothesis) sentence pair is
// reconstructed as _recon_lcs does and its distinct words are unioned over
// all pairs; f = 2 (p r) / (p + r + 1e-8). An empty hypothesis or reference
// (no sentence) raises in the package and LongBench returns 0.0.
func RougeL(pred, truth string) float64 {
	v, _ := rougeL(pred, truth)
	return v
}

// maxRougeCells bounds one sentence pair's LCS table (32 Mi cells, 128 MiB):
// the package's dict table would need gigabytes there, and its recursive
// reconstruction would overflow Python's stack long before.
const maxRougeCells = 1 << 25

// rougeL also returns the longest LCS walk over the sentence pairs: the
// package reconstructs recursively, one Python frame per step, so a walk
// near Python's recursion limit (1000 frames) raises RecursionError, which
// metrics.py's bare except turns into 0.0. The walk is -1 when a pair
// exceeds maxRougeCells (scored 0 here).
func rougeL(pred, truth string) (float64, int) {
	hyp, ref := rougeSentences(pred), rougeSentences(truth)
	if len(hyp) == 0 || len(ref) == 0 {
		return 0, 0
	}
	distinct := func(ws []string) int {
		set := map[string]bool{}
		for _, w := range ws {
			set[w] = true
		}
		return len(set)
	}
	m := distinct(rougeWords(ref))
	n := distinct(rougeWords(hyp))
	union := map[string]bool{}
	walk := 0
	var scratch []int32
	for _, r := range ref {
		rw := strings.Split(r, " ")
		for _, h := range hyp {
			hw := strings.Split(h, " ")
			if (len(rw)+1)*(len(hw)+1) > maxRougeCells {
				return 0, -1
			}
			words, steps := reconLCS(rw, hw, &scratch)
			walk = max(walk, steps)
			for _, w := range words {
				union[w] = true
			}
		}
	}
	llcs := float64(len(union))
	r := llcs / float64(m)
	p := llcs / float64(n)
	return 2.0 * ((p * r) / (p + r + 1e-8)), walk
}

// reconLCS is rouge_score._recon_lcs: the words of one LCS of x and y,
// walking back from (len x, len y) and preferring j-1 unless table[i-1][j] >
// table[i][j-1].
func reconLCS(x, y []string, scratch *[]int32) ([]string, int) {
	n, m := len(x), len(y)
	w := m + 1
	if cap(*scratch) < (n+1)*w {
		*scratch = make([]int32, (n+1)*w)
	}
	t := (*scratch)[:(n+1)*w]
	clear(t[:w])
	for i := 1; i <= n; i++ {
		row, up := t[i*w:(i+1)*w], t[(i-1)*w:i*w]
		row[0] = 0
		for j := 1; j <= m; j++ {
			if x[i-1] == y[j-1] {
				row[j] = up[j-1] + 1
			} else {
				row[j] = max(up[j], row[j-1])
			}
		}
	}
	at := func(i, j int) int32 { return t[i*w+j] }
	var out []string
	steps := 1 // the call that reaches i == 0 or j == 0
	for i, j := n, m; i > 0 && j > 0; steps++ {
		switch {
		case x[i-1] == y[j-1]:
			out = append(out, x[i-1])
			i, j = i-1, j-1
		case at(i-1, j) > at(i, j-1):
			i--
		default:
			j--
		}
	}
	return out, steps
}

var (
	choiceParen = regexp.MustCompile(`The correct answer is \(([A-D])\)`)
	choiceBare  = regexp.MustCompile(`The correct answer is ([A-D])`)
)

// ExtractChoice is LongBench v2 pred.py's extract_answer on the stripped
// response: remove '*', then "The correct answer is (X)" or "... is X",
// X in A-D; "" when neither matches (Python's None).
func ExtractChoice(response string) string {
	r := strings.ReplaceAll(pyStrip(response), "*", "")
	if m := choiceParen.FindStringSubmatch(r); m != nil {
		return m[1]
	}
	if m := choiceBare.FindStringSubmatch(r); m != nil {
		return m[1]
	}
	return ""
}

func pyStrip(s string) string { return strings.TrimFunc(s, pyIsSpace) }

// pyRound is Python's round(x, nd) for a float: the correctly rounded
// decimal (ties to even on the exact binary value), read back.
func pyRound(x float64, nd int) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', nd, 64), 64)
	return v
}

// npSum is numpy's pairwise summation of a float64 array (np.add.reduce,
// hence np.mean): straight below 8 values, 8 accumulators up to 128, halves
// (rounded down to a multiple of 8) above.
func npSum(a []float64) float64 {
	n := len(a)
	switch {
	case n < 8:
		res := 0.0
		for _, v := range a {
			res += v
		}
		return res
	case n <= 128:
		var r [8]float64
		copy(r[:], a[:8])
		i := 8
		for ; i < n-n%8; i += 8 {
			for k := range 8 {
				r[k] += a[i+k]
			}
		}
		res := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			res += a[i]
		}
		return res
	}
	n2 := n / 2
	n2 -= n2 % 8
	return npSum(a[:n2]) + npSum(a[n2:])
}

// npMean is np.mean of a float64 list: NaN when empty.
func npMean(a []float64) float64 {
	if len(a) == 0 {
		return math.NaN()
	}
	return npSum(a) / float64(len(a))
}
