package serving

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Plan is what the workload's command asks of a run: the settings that change
// which requests are sent and how long they are.
type Plan struct {
	Source           string   `json:"source"`  // where the plan comes from
	Command          string   `json:"command"` // the command it was read from, if any
	NumPrompts       int      `json:"num_prompts"`
	NoOversample     bool     `json:"no_oversample"`
	DisableShuffle   bool     `json:"disable_shuffle"`
	CustomOutputLen  int      `json:"custom_output_len"` // -1: each line's output_tokens; 0: not given
	SkipChatTemplate bool     `json:"skip_chat_template"`
	IgnoreEOS        bool     `json:"ignore_eos"`
	Temperature      *float64 `json:"temperature,omitempty"`
	DatasetName      string   `json:"dataset_name,omitempty"`
}

// consumers maps a result format to the words its command starts with.
var consumers = map[Format]string{
	VLLMServe:      "vllm bench serve",
	VLLMThroughput: "vllm bench throughput",
	SGLangServe:    "sglang.bench_serving",
	SGLangOffline:  "sglang.bench_offline_throughput",
	GoldsetOffline: "run_vllm_offline.py",
}

// PlanFor returns the plan for a result of format f (and, for SGLang, its
// recorded dataset_name): from the manifest's "files" command for that
// consumer, else the defaults of serving.md §3.
func (w *Workload) PlanFor(f Format, datasetName string) Plan {
	want := consumers[f]
	for _, file := range w.Files {
		if want == "" || !strings.Contains(file.Command, want) {
			continue
		}
		if datasetName != "" && !slices.Contains(splitCommand(file.Command), datasetName) {
			continue // SGLang: the custom and the sharegpt files have one command each
		}
		p := parseCommand(file.Command)
		p.Source = fmt.Sprintf("manifest files[%s].command", file.Path)
		if p.NumPrompts == 0 && f != GoldsetOffline {
			p.NumPrompts = 1000 // vLLM's and SGLang's --num-prompts default
		}
		return p
	}
	zero := 0.0
	p := Plan{NumPrompts: w.N(), NoOversample: true, DisableShuffle: true, CustomOutputLen: -1,
		SkipChatTemplate: true, IgnoreEOS: true, Temperature: &zero}
	switch f {
	case VLLMServe:
		p.Source = "serving.md §3 (the manifest has no vllm bench serve command)"
		p.DatasetName = "custom"
	case GoldsetOffline:
		p.Source = "run_vllm_offline.py's fixed sampling (temperature 0, ignore_eos=True); the manifest has no command"
	case VLLMThroughput:
		// run_vllm always sets ignore_eos=True (throughput.py).
		p.Source = "vllm bench throughput's fixed sampling (ignore_eos=True); the manifest has no command"
	default:
		// bench_serving / bench_offline_throughput send ignore_eos unless
		// --disable-ignore-eos.
		p.Source = "SGLang's defaults (ignore_eos on); the manifest has no command"
	}
	return p
}

// parseCommand reads the workload-changing flags of a vLLM or SGLang command.
func parseCommand(cmd string) Plan {
	p := Plan{Command: cmd}
	toks := splitCommand(cmd)
	sglang := strings.Contains(cmd, "sglang")
	p.IgnoreEOS = sglang // SGLang ignores EOS unless --disable-ignore-eos
	if strings.Contains(cmd, "vllm bench serve") && p.CustomOutputLen == 0 {
		p.CustomOutputLen = 256 // datasets.py's default
	}
	if strings.Contains(cmd, "run_vllm_offline.py") {
		// LLM.generate returns the requests in order, each with ignore_eos.
		p.IgnoreEOS, p.DisableShuffle, p.NoOversample = true, true, true
	}
	if strings.Contains(cmd, "vllm bench throughput") {
		p.IgnoreEOS = true
	}
	for i := 0; i < len(toks); i++ {
		name, val, hasVal := strings.Cut(toks[i], "=")
		next := func() string {
			if hasVal {
				return val
			}
			if i+1 < len(toks) {
				i++
				return toks[i]
			}
			return ""
		}
		switch name {
		case "--num-prompts", "--num-prompt":
			p.NumPrompts, _ = strconv.Atoi(next())
		case "--no-oversample":
			p.NoOversample = true
		case "--disable-shuffle":
			p.DisableShuffle = true
		case "--custom-output-len":
			p.CustomOutputLen, _ = strconv.Atoi(next())
		case "--skip-chat-template", "--custom-skip-chat-template":
			p.SkipChatTemplate = true
		case "--ignore-eos":
			p.IgnoreEOS = true
		case "--disable-ignore-eos":
			p.IgnoreEOS = false
		case "--temperature":
			if v, err := strconv.ParseFloat(next(), 64); err == nil {
				p.Temperature = &v
			}
		case "--dataset-name":
			p.DatasetName = next()
		}
	}
	return p
}

// splitCommand splits on blanks, honouring single and double quotes and
// backslash-newline continuations.
func splitCommand(s string) []string {
	var out []string
	var cur strings.Builder
	in := false
	var q rune
	flush := func() {
		if in {
			out = append(out, cur.String())
			cur.Reset()
			in = false
		}
	}
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case q != 0:
			if c == q {
				q = 0
			} else {
				cur.WriteRune(c)
			}
		case c == '\'' || c == '"':
			q, in = c, true
		case c == '\\' && i+1 < len(rs) && rs[i+1] == '\n':
			i++
		case c == ' ' || c == '\t' || c == '\n':
			flush()
		default:
			cur.WriteRune(c)
			in = true
		}
	}
	flush()
	return out
}
