package serving

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Failure is one way a result departs from its workload: the field, the
// request index (-1 for a whole-run value) and both values.
type Failure struct {
	Field string `json:"field"`
	Index int    `json:"index"`
	Got   string `json:"got"`
	Want  string `json:"want"`
	Note  string `json:"note,omitempty"`
}

func (f Failure) String() string {
	loc := f.Field
	if f.Index >= 0 {
		loc = fmt.Sprintf("%s[%d]", f.Field, f.Index)
	}
	s := fmt.Sprintf("%s: got %s, want %s", loc, f.Got, f.Want)
	if f.Note != "" {
		s += " (" + f.Note + ")"
	}
	return s
}

// CheckOptions adjusts what Check expects beyond the workload's plan.
type CheckOptions struct {
	// Shuffled compares per-request lengths as a multiset, for a run whose
	// client reorders requests by design.
	Shuffled bool
	// EOSAllowed accepts outputs shorter than max_new_tokens (a run without
	// --ignore-eos).
	EOSAllowed bool
	// MaxPerField bounds the per-request failures listed per field (default 10);
	// the rest are counted in one more entry.
	MaxPerField int
}

// Verdict is Check's answer.
type Verdict struct {
	Result   string    `json:"result"`
	Format   Format    `json:"format"`
	Kind     Kind      `json:"kind"`
	Workload string    `json:"workload"`
	Digest   string    `json:"workload_digest"`
	N        int       `json:"prompts"`
	Plan     Plan      `json:"plan"`
	OK       bool      `json:"ok"`
	Checked  []string  `json:"checked"`  // what was compared
	Failures []Failure `json:"failures"` // empty when OK
	Causes   []string  `json:"causes"`   // likely causes read from the failures
	Notes    []string  `json:"notes"`    // what could not be checked, and why
}

type checker struct {
	v    *Verdict
	w    *Workload
	r    *Result
	opts CheckOptions
}

func (c *checker) fail(f Failure) { c.v.Failures = append(c.v.Failures, f) }
func (c *checker) note(format string, a ...any) {
	c.v.Notes = append(c.v.Notes, fmt.Sprintf(format, a...))
}
func (c *checker) cause(format string, a ...any) {
	c.v.Causes = append(c.v.Causes, fmt.Sprintf(format, a...))
}
func (c *checker) checked(format string, a ...any) {
	c.v.Checked = append(c.v.Checked, fmt.Sprintf(format, a...))
}

// Check proves, as far as the result's format records it, that r ran w: the
// request count, failures, per-request input and output lengths and the
// recorded workload-changing settings.
func Check(w *Workload, r *Result, opts CheckOptions) *Verdict {
	if opts.MaxPerField <= 0 {
		opts.MaxPerField = 10
	}
	v := &Verdict{Result: r.Path, Format: r.Format, Kind: r.Kind, Workload: w.Dir, Digest: w.Digest, N: w.N(),
		Plan: w.PlanFor(r.Format, r.Recorded["dataset_name"]), Checked: []string{}, Failures: []Failure{}, Causes: []string{}, Notes: []string{}}
	c := &checker{v: v, w: w, r: r, opts: opts}
	if w.DigestComputed {
		c.note("workload_digest: the manifest has none; computed here from the prompts (custom_id, prompt_sha256, prompt_tokens, max_new_tokens)")
	} else if got := WorkloadDigest(w.Prompts); got != w.DigestRecorded {
		c.note("workload_digest: the manifest's %s differs from the one computed here (%s); the manifest's is used", w.DigestRecorded, got)
	}
	c.note("plan: %s", v.Plan.Source)
	switch r.Format {
	case VLLMServe:
		c.note("not in the result: vLLM's ready check sent request 0 in full once before the timed run (serve.py benchmark(), plus --num-warmups copies); keep prefix caching off on the server (--no-enable-prefix-caching) or the timed request 0 is a cache hit and its TTFT too low")
	case SGLangServe:
		c.note("not in the result: bench_serving sent --warmup-requests (default 1) copies of request 0 with at most 32 output tokens before the timed run; keep prefix caching off on the server (--disable-radix-cache) or the timed request 0 is a cache hit and its TTFT too low")
	}
	c.digest()
	c.counts()
	c.settings()
	if r.Detailed() {
		c.perRequest()
	} else {
		c.aggregates()
	}
	v.OK = len(v.Failures) == 0
	return v
}

func (c *checker) digest() {
	if c.r.Format == GoldsetOffline {
		// run_vllm_offline.py hashes the prompt file it read; the manifest
		// lists the sha256 of the one it wrote.
		file, got := c.r.Recorded["prompts_file"], c.r.Recorded["prompts_sha256"]
		if want, ok := c.w.Outputs[filepath.Base(file)]; ok && got != "" {
			c.checked("prompts_sha256 = the manifest's sha256 of %s", filepath.Base(file))
			if got != want {
				c.fail(Failure{Field: "prompts_sha256", Index: -1, Got: got, Want: want, Note: "the manifest's sha256 of " + filepath.Base(file)})
			}
		} else {
			c.note("prompts_sha256: the manifest lists no sha256 for %q", file)
		}
	}
	got, ok := c.r.Recorded["workload_digest"]
	if !ok {
		if c.r.Format == VLLMServe {
			c.note("workload_digest: not recorded in the result (add --metadata workload_digest=%s to vllm bench serve)", c.w.Digest)
		} else {
			c.note("workload_digest: not recorded (%s has no field for it); the lengths stand in for it", c.r.Format)
		}
		return
	}
	c.checked("workload_digest")
	if got != c.w.Digest {
		c.fail(Failure{Field: "workload_digest", Index: -1, Got: got, Want: c.w.Digest})
	}
}

func (c *checker) counts() {
	n, r := c.w.N(), c.r
	switch {
	case r.Requests >= 0:
		c.checked("completed+failed = %d", n)
		if r.Requests != n {
			c.fail(Failure{Field: "completed+failed", Index: -1, Got: itoa(r.Requests), Want: itoa(n) + " (the workload's prompts)"})
			c.countCause(r.Requests, n)
		}
	default:
		c.checked("completed = %d", n)
		c.note("failed: not recorded (SGLang bench_serving without --output-details); only completed is checked")
		if r.Completed != n {
			c.fail(Failure{Field: "completed", Index: -1, Got: itoa(r.Completed), Want: itoa(n) + " (the workload's prompts)"})
			c.countCause(r.Completed, n)
		}
	}
	if r.Failed >= 0 {
		c.checked("failed = 0")
		if r.Failed != 0 {
			c.fail(Failure{Field: "failed", Index: -1, Got: itoa(r.Failed), Want: "0"})
		}
	}
	if r.Errors != nil {
		listed := 0
		for i, e := range r.Errors {
			if e == "" {
				continue
			}
			if listed < c.opts.MaxPerField {
				c.fail(Failure{Field: "errors", Index: i, Got: strconv.Quote(firstLine(e, 160)), Want: `"" (success)`, Note: c.idNote(i)})
			}
			listed++
		}
		if listed > c.opts.MaxPerField {
			c.fail(Failure{Field: "errors", Index: -1, Got: fmt.Sprintf("%d failed requests", listed), Want: "0", Note: fmt.Sprintf("%d more not listed", listed-c.opts.MaxPerField)})
		}
		if listed > 0 {
			c.cause("failed requests drop out of every metric; vLLM counts an HTTP 400 (prompt + output over --max-model-len) as failed: check the server's --max-model-len >= %d", c.maxTotal())
		}
	}
}

func (c *checker) countCause(got, n int) {
	switch {
	case got > n && got%n == 0 || got == 1000:
		c.cause("%d requests from a %d-prompt workload: vLLM's loaders oversample with replacement up to --num-prompts (default 1000); run with --num-prompts %d --no-oversample", got, n, n)
	case got > n:
		c.cause("%d requests from a %d-prompt workload: --num-prompts larger than the workload (oversampled)", got, n)
	default:
		c.cause("%d requests from a %d-prompt workload: --num-prompts smaller than the workload, or the loader dropped prompts (vLLM's and SGLang's ShareGPT loaders drop prompts over 1024 tokens or prompt + output over 2048)", got, n)
	}
}

func (c *checker) maxTotal() int {
	m := 0
	for _, p := range c.w.Prompts {
		m = max(m, p.PromptTokens+p.MaxNewTokens)
	}
	return m
}

func (c *checker) idNote(i int) string {
	if !c.opts.Shuffled && c.v.Plan.DisableShuffle && i < len(c.w.Prompts) {
		return c.w.Prompts[i].CustomID
	}
	return ""
}

// settings compares what the result records of the settings that change the
// workload against the plan.
func (c *checker) settings() {
	rec, p := c.r.Recorded, c.v.Plan
	n := c.w.N()
	if c.r.Format == VLLMServe {
		// vLLM writes args.num_prompts, the CLI value, not what ran.
		if s, ok := rec["num_prompts"]; ok {
			c.checked("num_prompts = %d", n)
			if s != itoa(n) {
				c.fail(Failure{Field: "num_prompts", Index: -1, Got: s, Want: itoa(n), Note: "vLLM records the --num-prompts value"})
			}
		}
	}
	if c.r.Format == SGLangServe {
		if s, ok := rec["sharegpt_output_len"]; ok && s != "" {
			c.checked("sharegpt_output_len unset")
			c.fail(Failure{Field: "sharegpt_output_len", Index: -1, Got: s, Want: "null (each prompt's own output length)"})
		}
		if p.DatasetName != "" {
			c.checked("dataset_name = %s", p.DatasetName)
			if s := rec["dataset_name"]; s != p.DatasetName {
				c.fail(Failure{Field: "dataset_name", Index: -1, Got: s, Want: p.DatasetName})
			}
		}
	}
	// --metadata KEY=VALUE (vLLM) and --tag carry settings the tools do not
	// record themselves.
	type setting struct {
		key, want string
	}
	var wants []setting
	if c.r.Format == VLLMServe {
		wants = append(wants,
			setting{"no_oversample", strconv.FormatBool(p.NoOversample)},
			setting{"disable_shuffle", strconv.FormatBool(p.DisableShuffle)},
			setting{"custom_output_len", itoa(p.CustomOutputLen)},
			setting{"skip_chat_template", strconv.FormatBool(p.SkipChatTemplate)},
			setting{"ignore_eos", strconv.FormatBool(p.IgnoreEOS)})
	}
	if p.Temperature != nil && c.r.Format == VLLMServe {
		wants = append(wants, setting{"temperature", strconv.FormatFloat(*p.Temperature, 'g', -1, 64)})
	}
	var unrecorded []string
	for _, s := range wants {
		got, ok := rec[s.key]
		if !ok {
			unrecorded = append(unrecorded, s.key)
			continue
		}
		c.checked("%s = %s", s.key, s.want)
		if !sameSetting(got, s.want) {
			c.fail(Failure{Field: s.key, Index: -1, Got: got, Want: s.want, Note: "as the workload's command"})
		}
	}
	if len(unrecorded) > 0 {
		how := ""
		if c.r.Format == VLLMServe {
			how = " (vLLM writes them only as --metadata KEY=VALUE); the per-request lengths stand in for them"
		}
		c.note("not recorded in the result: %s%s", strings.Join(unrecorded, ", "), how)
	}
	switch c.r.Format {
	case SGLangServe:
		c.note("temperature: not recorded; bench_serving sends temperature 0 in the requests it builds (bench_serving.py)")
	case GoldsetOffline:
		c.note("temperature: not recorded; run_vllm_offline.py samples at temperature 0 with ignore_eos=True")
	case SGLangOffline:
		c.note("temperature: not recorded; bench_offline_throughput samples at temperature 0 (bench_offline_throughput.py)")
	case VLLMThroughput:
		c.note("temperature: not recorded; vllm bench throughput samples at temperature 1.0 with ignore_eos=True, so the lengths do not depend on it (throughput.py)")
	}
}

func sameSetting(got, want string) bool {
	if got == want {
		return true
	}
	gf, e1 := strconv.ParseFloat(got, 64)
	wf, e2 := strconv.ParseFloat(want, 64)
	if e1 == nil && e2 == nil {
		return gf == wf
	}
	gb, e1 := strconv.ParseBool(strings.ToLower(got))
	wb, e2 := strconv.ParseBool(want)
	return e1 == nil && e2 == nil && gb == wb
}

// perRequest compares input_lens and output_lens with the manifest.
func (c *checker) perRequest() {
	r, n := c.r, c.w.N()
	if len(r.InputLens) != n {
		c.fail(Failure{Field: "input_lens", Index: -1, Got: fmt.Sprintf("%d entries", len(r.InputLens)), Want: fmt.Sprintf("%d entries", n), Note: "per-request lengths not compared"})
		return
	}
	src := inputLensSource(r.Format)
	if r.CustomIDs != nil {
		c.checked("custom_id[i] = the manifest's custom_id[i] in order")
		bad := 0
		for i, id := range r.CustomIDs {
			if id == c.w.Prompts[i].CustomID {
				continue
			}
			if bad < c.opts.MaxPerField {
				c.fail(Failure{Field: "custom_id", Index: i, Got: strconv.Quote(id), Want: strconv.Quote(c.w.Prompts[i].CustomID)})
			}
			bad++
		}
		if bad > c.opts.MaxPerField {
			c.fail(Failure{Field: "custom_id", Index: -1, Got: fmt.Sprintf("%d of %d requests differ", bad, len(r.CustomIDs)), Want: "0", Note: fmt.Sprintf("%d more not listed", bad-c.opts.MaxPerField)})
		}
	}
	multiset := c.opts.Shuffled || !c.v.Plan.DisableShuffle
	if multiset {
		why := "--shuffled"
		if !c.v.Plan.DisableShuffle {
			why = "the workload's command does not pass --disable-shuffle"
		}
		c.note("input_lens and output_lens compared as a multiset of (input, output) pairs, not in order (%s): the order of the run is not checked", why)
		c.multiset()
		return
	}
	c.checked("input_lens[i] = prompt_tokens[i] in order (%s)", src)
	want := func(i int) int { return c.w.Prompts[i].PromptTokens }
	bad := c.compare("input_lens", r.InputLens, want, func(g, w int) bool { return g == w }, "prompt_tokens")
	if bad > 0 && c.inputCause(want) {
		c.note("output_lens: not compared in order, the requests are out of order (check with --shuffled to compare them as pairs)")
		return
	}
	c.outputs()
}

// inputLensSource says who counted a format's input_lens, as read in the
// producers' source (doc.go, "Result formats"). vLLM's request function
// takes the server's usage.prompt_tokens where it reads the usage chunk
// (vllm/benchmarks/lib/endpoint_request_func.py @ 02cfb534) and keeps the
// client's count otherwise (@ 3aee4a4f, and any request without a usage
// chunk); SGLang's bench_serving.py @ 0033168f and
// benchmark/backends/sglang_client.py @ 4bae336a keep the client's
// DatasetRow.prompt_len, later clients may record the server's count.
func inputLensSource(f Format) string {
	switch f {
	case SGLangServe:
		return "SGLang: the client's tokenizer count (bench_serving @ 0033168f), or the server's in later clients"
	case GoldsetOffline:
		return "engine-counted (len(RequestOutput.prompt_token_ids))"
	}
	return "vLLM: the server's usage.prompt_tokens where the client reads it (endpoint_request_func.py @ 02cfb534), else the client's tokenizer count (@ 3aee4a4f)"
}

// offsetCause words a constant input-length offset d by who may have
// counted: a client counts what it sends (a second chat template), a
// server may tokenize or template differently.
func offsetCause(f Format, d int) string {
	n, dir := d, "longer"
	if d < 0 {
		n, dir = -d, "shorter"
	}
	s := fmt.Sprintf("%d tokens %s than the manifest's; input_lens is %s. ", n, dir, inputLensSource(f))
	server := "the server tokenized or templated differently (another tokenizer, a chat endpoint templating again, an added BOS)"
	if f == GoldsetOffline {
		return s + "The engine counted: " + server
	}
	client := "the prompts went out without their chat template"
	if d > 0 {
		fix := "vLLM: --skip-chat-template, serve.jsonl to /v1/completions"
		if f == SGLangServe || f == SGLangOffline {
			fix = "SGLang: drop --apply-chat-template"
		}
		client = "a chat template applied on top of the already templated prompts (Qwen3's adds 8 tokens, 12 with the empty think block; " + fix + ")"
	}
	return s + "Counted by the client: " + client + "; counted by the server: " + server
}

// compare lists per-request mismatches of one field (failed requests are
// skipped: they already failed) and returns how many there were.
func (c *checker) compare(field string, got []int, want func(int) int, ok func(g, w int) bool, wantName string) int {
	bad := 0
	for i, g := range got {
		if !c.r.success(i) {
			continue
		}
		w := want(i)
		if ok(g, w) {
			continue
		}
		if bad < c.opts.MaxPerField {
			note := c.idNote(i)
			c.fail(Failure{Field: field, Index: i, Got: itoa(g), Want: fmt.Sprintf("%d (%s)", w, wantName), Note: note})
		}
		bad++
	}
	if bad > c.opts.MaxPerField {
		c.fail(Failure{Field: field, Index: -1, Got: fmt.Sprintf("%d of %d requests differ", bad, len(got)), Want: "0", Note: fmt.Sprintf("%d more not listed", bad-c.opts.MaxPerField)})
	}
	return bad
}

// inputCause explains input length mismatches; it returns true when the run
// was shuffled.
func (c *checker) inputCause(want func(int) int) bool {
	r := c.r
	// A constant offset is a template added or missing; equal multisets in a
	// different order are a shuffle.
	d, constant := 0, true
	first := true
	for i, g := range r.InputLens {
		if !r.success(i) {
			continue
		}
		if first {
			d, first = g-want(i), false
		} else if g-want(i) != d {
			constant = false
			break
		}
	}
	switch {
	case constant && d != 0:
		c.cause("every input is %s", offsetCause(r.Format, d))
	default:
		got := slices.Clone(r.InputLens)
		wantAll := make([]int, len(got))
		for i := range wantAll {
			wantAll[i] = want(i)
		}
		slices.Sort(got)
		slices.Sort(wantAll)
		if slices.Equal(got, wantAll) {
			c.cause("the input lengths match the manifest's as a multiset but not in order: the run was shuffled (vLLM shuffles unless --disable-shuffle); rerun with --disable-shuffle, or check with --shuffled to compare as a multiset")
			return true
		}
	}
	return false
}

func (c *checker) outputs() {
	r := c.r
	want := func(i int) int { return c.w.Prompts[i].MaxNewTokens }
	if c.opts.EOSAllowed || !c.v.Plan.IgnoreEOS {
		c.checked("output_lens[i] <= max_new_tokens[i] (EOS allowed)")
		c.compare("output_lens", r.OutputLens, want, func(g, w int) bool { return g <= w }, "at most max_new_tokens")
		return
	}
	c.checked("output_lens[i] = max_new_tokens[i] (EOS ignored)")
	if c.compare("output_lens", r.OutputLens, want, func(g, w int) bool { return g == w }, "max_new_tokens") > 0 {
		c.outputCause(want)
	}
}

func (c *checker) outputCause(want func(int) int) {
	r := c.r
	same, v := true, -1
	varied, shorter := false, true
	for i, g := range r.OutputLens {
		if !r.success(i) {
			continue
		}
		if g > want(i) {
			shorter = false
		}
		if v < 0 {
			v = g
		} else if g != v {
			same = false
		}
		if want(i) != want(0) {
			varied = true
		}
	}
	switch {
	case same && varied:
		hint := ""
		if v == 256 {
			hint = ": vLLM's custom dataset default --custom-output-len 256 replaced each line's output_tokens; pass --custom-output-len -1"
		}
		c.cause("every output has %d tokens while the workload asks per-prompt lengths%s", v, hint)
	case same:
		c.cause("every output has %d tokens: a fixed --output-len / --sharegpt-output-len overrode the workload's", v)
	case shorter:
		c.cause("outputs shorter than max_new_tokens end at EOS: run with --ignore-eos (or check with --eos-allowed if EOS was meant to count)")
	default:
		c.cause("outputs longer than max_new_tokens: the client's output length is not the workload's (--output-len, --custom-output-len, --sharegpt-output-len)")
	}
}

// multiset compares (input, output) pairs regardless of order.
func (c *checker) multiset() {
	r := c.r
	eos := c.opts.EOSAllowed || !c.v.Plan.IgnoreEOS
	type pair struct{ in, out int }
	wantIn := map[int]int{}
	want := map[pair]int{}
	for _, p := range c.w.Prompts {
		want[pair{p.PromptTokens, p.MaxNewTokens}]++
		wantIn[p.PromptTokens]++
	}
	c.checked("input_lens as a multiset = prompt_tokens")
	if eos {
		c.checked("output_lens <= max_new_tokens of a prompt with that input length (EOS allowed)")
	} else {
		c.checked("(input_lens, output_lens) pairs as a multiset = (prompt_tokens, max_new_tokens)")
	}
	bad := 0
	for i := range r.InputLens {
		if !r.success(i) {
			continue
		}
		in := r.InputLens[i]
		if wantIn[in] == 0 {
			if bad < c.opts.MaxPerField {
				c.fail(Failure{Field: "input_lens", Index: i, Got: itoa(in), Want: "a prompt_tokens value of the manifest not yet matched", Note: "multiset"})
			}
			bad++
			continue
		}
		wantIn[in]--
		if eos {
			continue
		}
		pr := pair{in, r.OutputLens[i]}
		if want[pr] == 0 {
			if bad < c.opts.MaxPerField {
				c.fail(Failure{Field: "output_lens", Index: i, Got: itoa(pr.out), Want: fmt.Sprintf("the max_new_tokens of a prompt with %d input tokens", in), Note: "multiset"})
			}
			bad++
			continue
		}
		want[pr]--
	}
	if bad > 0 {
		// Sorted, a constant offset is a template added (or missing) on
		// every request whatever the order.
		got := slices.Clone(r.InputLens)
		want := make([]int, 0, len(c.w.Prompts))
		for _, p := range c.w.Prompts {
			want = append(want, p.PromptTokens)
		}
		slices.Sort(got)
		slices.Sort(want)
		if len(got) == len(want) && len(got) > 0 {
			d, constant := got[0]-want[0], true
			for i := range got {
				constant = constant && got[i]-want[i] == d
			}
			if constant && d != 0 {
				c.cause("sorted, every input is %s", offsetCause(r.Format, d))
			}
		}
	}
	if bad > c.opts.MaxPerField {
		c.fail(Failure{Field: "input_lens/output_lens", Index: -1, Got: fmt.Sprintf("%d requests unmatched", bad), Want: "0", Note: fmt.Sprintf("%d more not listed", bad-c.opts.MaxPerField)})
	}
}

// aggregates checks the totals of formats without per-request lengths.
func (c *checker) aggregates() {
	r, w := c.r, c.w
	sumIn, sumOut := w.TotalPromptTokens(), w.TotalMaxNewTokens()
	n := int64(w.N())
	eos := c.opts.EOSAllowed || !c.v.Plan.IgnoreEOS
	switch {
	case r.Format == VLLMThroughput:
		c.note("vllm bench throughput --output-json records no per-request lengths: only totals are compared")
		if eos {
			c.note("total_num_tokens: not compared (EOS allowed, so output lengths are unknown)")
			return
		}
		c.checked("total_num_tokens = sum(prompt_tokens) + sum(max_new_tokens) = %d", sumIn+sumOut)
		if r.TotalTokens != sumIn+sumOut {
			c.fail(Failure{Field: "total_num_tokens", Index: -1, Got: i64(r.TotalTokens), Want: fmt.Sprintf("%d (%d prompt + %d output)", sumIn+sumOut, sumIn, sumOut)})
			d := r.TotalTokens - (sumIn + sumOut)
			if r.Requests == w.N() && d > 0 && d%n == 0 {
				c.cause("total_num_tokens is %d tokens per request over the workload's: a chat template added on top of the templated prompts (Qwen3's adds 8), or longer outputs", d/n)
			}
		}
	default:
		if r.Format == VLLMServe {
			c.note("no per-request lengths (run vllm bench serve with --save-detailed): only totals are compared")
		} else {
			c.note("no per-request lengths (SGLang: --output-details): only totals are compared")
		}
		if r.TotalInput >= 0 {
			c.checked("total_input_tokens = sum(prompt_tokens) = %d", sumIn)
			if r.TotalInput != sumIn {
				c.fail(Failure{Field: "total_input_tokens", Index: -1, Got: i64(r.TotalInput), Want: i64(sumIn) + " (sum of prompt_tokens)"})
				if d := r.TotalInput - sumIn; r.Completed == w.N() && d%n == 0 && d != 0 {
					c.cause("total_input_tokens differs by %d tokens per request: a chat template added or missing (Qwen3's is 8 tokens)", d/n)
				}
			}
		}
		if r.TotalOutput >= 0 {
			if eos {
				c.checked("total_output_tokens <= sum(max_new_tokens) = %d (EOS allowed)", sumOut)
				if r.TotalOutput > sumOut {
					c.fail(Failure{Field: "total_output_tokens", Index: -1, Got: i64(r.TotalOutput), Want: "at most " + i64(sumOut)})
				}
			} else {
				c.checked("total_output_tokens = sum(max_new_tokens) = %d (EOS ignored)", sumOut)
				if r.TotalOutput != sumOut {
					c.fail(Failure{Field: "total_output_tokens", Index: -1, Got: i64(r.TotalOutput), Want: i64(sumOut) + " (sum of max_new_tokens)"})
					if r.Completed == w.N() && r.TotalOutput == 256*n {
						c.cause("every request produced 256 tokens: vLLM's default --custom-output-len 256; pass --custom-output-len -1")
					}
				}
			}
		}
	}
}

func itoa(n int) string  { return strconv.Itoa(n) }
func i64(n int64) string { return strconv.FormatInt(n, 10) }

func firstLine(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		// A Python traceback's last line names the exception.
		lines := strings.Split(s, "\n")
		s = strings.TrimSpace(lines[len(lines)-1])
	}
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}
