package serving

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/goldset/goldset/internal/safefile"
)

// Format names a result file's producer.
type Format string

const (
	VLLMServe      Format = "vllm-bench-serve"          // vllm bench serve --save-result [--save-detailed]
	VLLMThroughput Format = "vllm-bench-throughput"     // vllm bench throughput --output-json
	SGLangServe    Format = "sglang-bench-serving"      // python -m sglang.bench_serving --output-file [--output-details]
	SGLangOffline  Format = "sglang-offline-throughput" // python -m sglang.bench_offline_throughput --result-filename
	// GoldsetOffline is run_vllm_offline.py, the LLM.generate driver that
	// `goldset longbench build` writes beside prompt_ids.jsonl (issue 12).
	GoldsetOffline Format = "goldset-run-vllm-offline"
)

// Kind separates the two measures that are never ranked together.
type Kind string

const (
	Serving Kind = "serving" // a server under a load client: latencies and throughput
	Offline Kind = "offline" // one process runs the whole set: throughput only
)

// Kind returns the measure a format belongs to.
func (f Format) Kind() Kind {
	if f == VLLMThroughput || f == SGLangOffline || f == GoldsetOffline {
		return Offline
	}
	return Serving
}

// maxResultBytes bounds a result file (a detailed vLLM result of 1000
// requests with 8K-token outputs is about 200 MB).
const maxResultBytes = 1 << 30

// Result is one benchmark run read from a result file. Counts that the format
// does not record are -1; per-request slices are nil when not recorded.
type Result struct {
	Path   string `json:"path"`
	Format Format `json:"format"`
	Kind   Kind   `json:"kind"`
	Run    int    `json:"run"`  // index of this run among the file's JSON values (appended files hold several)
	Runs   int    `json:"runs"` // JSON values in the file
	Label  string `json:"label"`

	Requests  int `json:"requests"`  // requests sent (completed + failed), -1 if unknown
	Completed int `json:"completed"` // successful requests
	Failed    int `json:"failed"`    // -1 if unknown

	Duration             float64 `json:"duration_s"`
	TotalInput           int64   `json:"total_input_tokens"`  // -1 if not recorded
	TotalOutput          int64   `json:"total_output_tokens"` // -1 if not recorded
	TotalTokens          int64   `json:"total_tokens"`        // input + output; -1 if not recorded
	RequestThroughput    float64 `json:"request_throughput"`
	OutputThroughput     float64 `json:"output_throughput"`      // 0 if not recorded
	TotalTokenThroughput float64 `json:"total_token_throughput"` // 0 if not recorded
	PeakConcurrency      int     `json:"peak_concurrency"`       // -1 if not recorded nor computable
	MeanConcurrency      float64 `json:"mean_concurrency"`       // SGLang's "concurrency": sum of latencies / duration; 0 if not recorded

	// Per request, in the order the client sent them (with --save-detailed /
	// --output-details).
	InputLens  []int       `json:"-"`
	OutputLens []int       `json:"-"`
	TTFTs      []float64   `json:"-"` // seconds
	ITLs       [][]float64 `json:"-"` // seconds
	Latencies  []float64   `json:"-"` // seconds (vLLM only)
	StartTimes []float64   `json:"-"` // seconds (vLLM only)
	Errors     []string    `json:"-"`
	CustomIDs  []string    `json:"-"` // run_vllm_offline.py only
	// Texts are the generated texts (vLLM --save-detailed and SGLang
	// --output-details generated_texts; run_vllm_offline.py requests[].text
	// when the script wrote it); nil when not recorded.
	Texts []string `json:"-"`
	// TokenIDs are the generated token ids (run_vllm_offline.py
	// requests[].output_token_ids when written); nil when not recorded.
	TokenIDs [][]int `json:"-"`

	// Summary holds the recorded summary statistics, e.g. "p99_ttft_ms".
	Summary map[string]float64 `json:"-"`
	// Recorded holds the scalar settings the file records (num_prompts,
	// dataset_name, --metadata keys, ...) as text.
	Recorded map[string]string `json:"recorded"`
}

// Detailed says the file carries per-request lengths.
func (r *Result) Detailed() bool { return r.InputLens != nil }

// ReadResult reads run `run` of a result file (negative counts from the end:
// -1 is the last run appended).
func ReadResult(path string, run int) (*Result, error) {
	b, err := readResultFile(path)
	if err != nil {
		return nil, err
	}
	r, err := ParseResult(b, run)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.Path = path
	return r, nil
}

// readResultFile reads a result file: a regular file (internal/safefile),
// its size checked against maxResultBytes before reading.
func readResultFile(path string) ([]byte, error) {
	b, err := safefile.ReadFile(path, maxResultBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrResult, err)
	}
	return b, nil
}

// ParseResult parses result bytes: one JSON object, or several appended
// (JSONL, vLLM --append-result).
func ParseResult(b []byte, run int) (*Result, error) {
	if isRunBatch(b) {
		return nil, fmt.Errorf("%w: vllm run-batch output (one line per custom_id) records no timings or run totals to check or report; serving score reads its texts", ErrResult)
	}
	dec := json.NewDecoder(bytes.NewReader(pythonJSON(b)))
	dec.UseNumber()
	var runs []map[string]json.RawMessage
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: JSON value %d: %v", ErrResult, len(runs)+1, err)
		}
		var m map[string]json.RawMessage
		if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
			return nil, fmt.Errorf("%w: JSON value %d is not an object", ErrResult, len(runs)+1)
		}
		runs = append(runs, m)
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("%w: empty file", ErrResult)
	}
	idx := run
	if idx < 0 {
		idx += len(runs)
	}
	if idx < 0 || idx >= len(runs) {
		return nil, fmt.Errorf("%w: run %d requested, the file holds %d", ErrResult, run, len(runs))
	}
	r, err := parseRun(runs[idx])
	if err != nil {
		return nil, fmt.Errorf("run %d: %w", idx, err)
	}
	r.Run, r.Runs = idx, len(runs)
	return r, nil
}

// detect names the format from the keys each producer always writes.
func detect(m map[string]json.RawMessage) (Format, error) {
	has := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := m[k]; !ok {
				return false
			}
		}
		return true
	}
	switch {
	case has("tool", "requests", "elapsed_s", "num_requests"):
		return GoldsetOffline, nil
	case has("elapsed_time", "num_requests", "total_num_tokens"):
		return VLLMThroughput, nil
	case has("successful_requests", "total_latency", "total_input_tokens"):
		return SGLangOffline, nil
	case has("completed", "failed", "num_prompts"):
		return VLLMServe, nil
	case has("completed", "dataset_name", "total_input_tokens"):
		return SGLangServe, nil
	}
	return "", fmt.Errorf("%w: not a vLLM bench serve/throughput, SGLang bench_serving/bench_offline_throughput or run_vllm_offline.py result (none of their key sets present)", ErrResult)
}

type fields struct {
	m   map[string]json.RawMessage
	err error
}

func (f *fields) fail(key, what string, err error) {
	if f.err == nil {
		f.err = fmt.Errorf("%w: %q: %s: %v", ErrResult, key, what, err)
	}
}

func (f *fields) present(key string) bool {
	v, ok := f.m[key]
	return ok && string(v) != "null"
}

func (f *fields) num(key string, def float64) float64 {
	if !f.present(key) {
		return def
	}
	var n json.Number
	if err := json.Unmarshal(f.m[key], &n); err != nil {
		// vLLM writes request_rate "inf" as a string.
		var s string
		if json.Unmarshal(f.m[key], &s) == nil {
			if v, perr := strconv.ParseFloat(s, 64); perr == nil {
				return v
			}
		}
		f.fail(key, "want a number", err)
		return def
	}
	v, err := n.Float64()
	if err != nil {
		f.fail(key, "want a number", err)
	}
	return v
}

func (f *fields) int(key string, def int64) int64 {
	v := f.num(key, float64(def))
	if v != math.Trunc(v) || math.Abs(v) > 1<<53 {
		f.fail(key, "want an integer", fmt.Errorf("%v", v))
		return def
	}
	return int64(v)
}

func (f *fields) ints(key string) []int {
	if !f.present(key) {
		return nil
	}
	var raw []json.Number
	if err := json.Unmarshal(f.m[key], &raw); err != nil {
		f.fail(key, "want a list of integers", err)
		return nil
	}
	out := make([]int, len(raw))
	for i, n := range raw {
		v, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil || v < 0 || v > math.MaxInt32 {
			f.fail(fmt.Sprintf("%s[%d]", key, i), "want a non-negative integer", fmt.Errorf("%s", n))
			return nil
		}
		out[i] = int(v)
	}
	return out
}

func (f *fields) floats(key string) []float64 { return list[float64](f, key, "numbers") }

func (f *fields) strings(key string) []string { return list[string](f, key, "strings") }

// list decodes a JSON list whose nulls become T's zero value.
func list[T any](f *fields, key, what string) []T {
	if !f.present(key) {
		return nil
	}
	var raw []*T
	if err := json.Unmarshal(f.m[key], &raw); err != nil {
		f.fail(key, "want a list of "+what, err)
		return nil
	}
	out := make([]T, len(raw))
	for i, p := range raw {
		if p != nil {
			out[i] = *p
		}
	}
	return out
}

func (f *fields) floatLists(key string) [][]float64 {
	if !f.present(key) {
		return nil
	}
	var raw [][]float64
	if err := json.Unmarshal(f.m[key], &raw); err != nil {
		f.fail(key, "want a list of lists of numbers", err)
		return nil
	}
	return raw
}

// scalars returns every scalar (string, number, bool) value as text.
func scalars(m map[string]json.RawMessage) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		// Lists and objects are not settings; skipping them saves decoding
		// the per-request arrays twice.
		if len(v) == 0 || v[0] == '[' || v[0] == '{' {
			continue
		}
		var x any
		if json.Unmarshal(v, &x) != nil {
			continue
		}
		switch t := x.(type) {
		case string:
			out[k] = t
		case json.Number:
			out[k] = t.String()
		case float64:
			out[k] = strconv.FormatFloat(t, 'g', -1, 64)
		case bool:
			out[k] = strconv.FormatBool(t)
		}
	}
	return out
}

// summaryKeys are the recorded statistics report reads when it cannot
// recompute them from per-request data.
var summaryMetrics = []string{"ttft", "tpot", "itl", "e2el", "e2e_latency"}

func parseRun(m map[string]json.RawMessage) (*Result, error) {
	format, err := detect(m)
	if err != nil {
		return nil, err
	}
	f := &fields{m: m}
	r := &Result{Format: format, Kind: format.Kind(), Requests: -1, Failed: -1, TotalInput: -1, TotalOutput: -1,
		TotalTokens: -1, PeakConcurrency: -1, Summary: map[string]float64{}}
	// json.Number keeps integers exact; scalars() re-decodes with UseNumber off,
	// which is fine for settings.
	r.Recorded = scalars(m)
	for k, v := range r.Recorded {
		if n, err := strconv.ParseFloat(v, 64); err == nil {
			for _, s := range summaryMetrics {
				if len(k) > len(s)+4 && k[len(k)-len(s)-4:] == "_"+s+"_ms" {
					r.Summary[k] = n
				}
			}
		}
	}
	switch format {
	case VLLMServe:
		r.Label = firstNonEmpty(r.Recorded["label"], r.Recorded["backend"]) + " " + r.Recorded["model_id"]
		r.readServeFields(f, "total_token_throughput")
		r.Failed = int(f.int("failed", 0))
		r.Requests = r.Completed + r.Failed
		r.Latencies = f.floats("latencies")
		r.StartTimes = f.floats("start_times")
	case SGLangServe:
		r.Label = r.Recorded["backend"] + " " + r.Recorded["dataset_name"]
		r.readServeFields(f, "total_throughput")
		r.MeanConcurrency = f.num("concurrency", 0)
		if r.InputLens != nil {
			// SGLang records no failure count: every request has an entry, and
			// a failed one an error text.
			r.Requests = len(r.InputLens)
			r.Failed = r.Requests - r.Completed
		}
	case VLLMThroughput:
		r.Label = "vllm bench throughput"
		r.Requests = int(f.int("num_requests", 0))
		r.Completed = r.Requests // run_vllm has no failure path: LLM.generate raises
		r.Failed = 0
		r.Duration = f.num("elapsed_time", 0)
		r.TotalTokens = f.int("total_num_tokens", -1)
		r.RequestThroughput = f.num("requests_per_second", 0)
		r.TotalTokenThroughput = f.num("tokens_per_second", 0)
	case GoldsetOffline:
		r.Label = "run_vllm_offline.py " + r.Recorded["model"]
		r.Requests = int(f.int("num_requests", 0))
		r.Completed = int(f.int("completed", 0))
		r.Failed = int(f.int("failed", 0)) // requests that came back with other lengths
		r.Duration = f.num("elapsed_s", 0)
		r.readTokenTotals(f, "input_tokens", "output_tokens")
		r.RequestThroughput = f.num("requests_per_s", 0)
		r.OutputThroughput = f.num("output_tokens_per_s", 0)
		r.TotalTokenThroughput = f.num("total_tokens_per_s", 0)
		var reqs []struct {
			CustomID     *string `json:"custom_id"`
			PromptTokens *int    `json:"prompt_tokens"`
			OutputTokens *int    `json:"output_tokens"`
			Text         *string `json:"text"`
			TokenIDs     []int   `json:"output_token_ids"`
		}
		if err := json.Unmarshal(m["requests"], &reqs); err != nil {
			f.fail("requests", "want a list of {custom_id, prompt_tokens, output_tokens}", err)
			break
		}
		r.InputLens, r.OutputLens, r.CustomIDs = make([]int, len(reqs)), make([]int, len(reqs)), make([]string, len(reqs))
		withText := 0
		for _, q := range reqs {
			if q.Text != nil {
				withText++
			}
		}
		if withText != 0 && withText != len(reqs) {
			f.fail("requests", "text present in some requests only", fmt.Errorf("%d of %d", withText, len(reqs)))
			break
		}
		for i, q := range reqs {
			if q.CustomID == nil || q.PromptTokens == nil || q.OutputTokens == nil || *q.PromptTokens < 0 || *q.OutputTokens < 0 {
				f.fail(fmt.Sprintf("requests[%d]", i), "want custom_id and non-negative prompt_tokens, output_tokens", fmt.Errorf("missing or negative"))
				break
			}
			r.CustomIDs[i], r.InputLens[i], r.OutputLens[i] = *q.CustomID, *q.PromptTokens, *q.OutputTokens
			if q.Text != nil {
				if r.Texts == nil {
					r.Texts = make([]string, len(reqs))
				}
				r.Texts[i] = *q.Text
			}
			if q.TokenIDs != nil {
				if r.TokenIDs == nil {
					r.TokenIDs = make([][]int, len(reqs))
				}
				r.TokenIDs[i] = q.TokenIDs
			}
		}
	case SGLangOffline:
		r.Label = "sglang offline " + r.Recorded["backend"]
		r.Completed = int(f.int("successful_requests", 0))
		r.Requests = r.Completed // Engine.generate returns every request or raises
		r.Failed = 0
		r.Duration = f.num("total_latency", 0)
		r.readTokenTotals(f, "total_input_tokens", "total_output_tokens")
		r.RequestThroughput = f.num("request_throughput", 0)
		r.OutputThroughput = f.num("output_throughput", 0)
		r.TotalTokenThroughput = f.num("total_throughput", 0)
	}
	if f.err != nil {
		return nil, f.err
	}
	if r.Completed < 0 || r.Failed < -1 || r.Requests < -1 {
		return nil, fmt.Errorf("%w: negative request counts (completed %d, failed %d)", ErrResult, r.Completed, r.Failed)
	}
	if err := r.checkShapes(); err != nil {
		return nil, err
	}
	if r.PeakConcurrency < 0 && r.StartTimes != nil && r.Latencies != nil {
		r.PeakConcurrency = peakConcurrency(r.StartTimes, r.Latencies, r.Errors)
	}
	return r, nil
}

// checkShapes requires the per-request lists to have one entry per request.
func (r *Result) checkShapes() error {
	n := len(r.InputLens)
	lists := []struct {
		name string
		len  int
		nil  bool
	}{
		{"output_lens", len(r.OutputLens), r.OutputLens == nil},
		{"ttfts", len(r.TTFTs), r.TTFTs == nil},
		{"itls", len(r.ITLs), r.ITLs == nil},
		{"latencies", len(r.Latencies), r.Latencies == nil},
		{"start_times", len(r.StartTimes), r.StartTimes == nil},
		{"errors", len(r.Errors), r.Errors == nil},
		{"custom_ids", len(r.CustomIDs), r.CustomIDs == nil},
		{"generated_texts", len(r.Texts), r.Texts == nil},
	}
	for _, l := range lists {
		if l.nil {
			continue
		}
		if r.InputLens == nil {
			// vLLM keeps latencies even without --save-detailed.
			if l.name == "latencies" {
				continue
			}
			return fmt.Errorf("%w: %q present without input_lens", ErrResult, l.name)
		}
		if l.len != n {
			return fmt.Errorf("%w: %q has %d entries, input_lens %d", ErrResult, l.name, l.len, n)
		}
	}
	if r.InputLens != nil && r.Requests >= 0 && (r.Format == VLLMServe || r.Format == GoldsetOffline) && n != r.Requests {
		return fmt.Errorf("%w: input_lens has %d entries, completed+failed = %d", ErrResult, n, r.Requests)
	}
	return nil
}

// success says whether request i succeeded (its error text is empty).
func (r *Result) success(i int) bool {
	if r.Errors == nil {
		return true
	}
	return r.Errors[i] == ""
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// pythonJSON quotes the NaN, Infinity and -Infinity that Python's json.dumps
// writes for float("inf") (SGLang's default request_rate), so encoding/json
// reads them as strings; num() parses those back.
func pythonJSON(b []byte) []byte {
	var out []byte
	inStr, esc := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			if out != nil {
				out = append(out, c)
			}
			continue
		}
		if c == '"' {
			inStr = true
		} else if w := pythonLiteral(b[i:]); w != "" {
			if out == nil {
				out = append(make([]byte, 0, len(b)+16), b[:i]...)
			}
			out = append(out, '"')
			out = append(out, w...)
			out = append(out, '"')
			i += len(w) - 1
			continue
		}
		if out != nil {
			out = append(out, c)
		}
	}
	if out == nil {
		return b
	}
	return out
}

func pythonLiteral(b []byte) string {
	for _, w := range []string{"-Infinity", "Infinity", "NaN"} {
		if bytes.HasPrefix(b, []byte(w)) {
			return w
		}
	}
	return ""
}

// readServeFields reads the fields vLLM's serve.py and SGLang's
// bench_serving.py both write under the same keys; only the total-token
// throughput's key differs between them.
func (r *Result) readServeFields(f *fields, totalThroughputKey string) {
	r.Completed = int(f.int("completed", 0))
	r.Duration = f.num("duration", 0)
	r.readTokenTotals(f, "total_input_tokens", "total_output_tokens")
	r.RequestThroughput = f.num("request_throughput", 0)
	r.OutputThroughput = f.num("output_throughput", 0)
	r.TotalTokenThroughput = f.num(totalThroughputKey, 0)
	r.PeakConcurrency = int(f.int("max_concurrent_requests", -1))
	r.InputLens = f.ints("input_lens")
	r.OutputLens = f.ints("output_lens")
	r.TTFTs = f.floats("ttfts")
	r.ITLs = f.floatLists("itls")
	r.Errors = f.strings("errors")
	r.Texts = f.strings("generated_texts")
}

// readTokenTotals reads the input and output token totals (-1: not
// recorded) and their sum when both are there.
func (r *Result) readTokenTotals(f *fields, inputKey, outputKey string) {
	r.TotalInput = f.int(inputKey, -1)
	r.TotalOutput = f.int(outputKey, -1)
	if r.TotalInput >= 0 && r.TotalOutput >= 0 {
		r.TotalTokens = r.TotalInput + r.TotalOutput
	}
}
