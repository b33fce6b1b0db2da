package serving

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// VLLMRunBatch is `vllm run-batch -o F`'s output (read only by score: the
// file has no timings for check or report).
const VLLMRunBatch Format = "vllm-run-batch"

// ErrNoTexts: a result file that records no generated texts.
var ErrNoTexts = errors.New("serving: result has no generated texts")

// Generations is what one run generated, per request in the result's order.
type Generations struct {
	Path   string `json:"path"`
	Format Format `json:"format"`
	Label  string `json:"label"`
	Texts  []string
	// CustomIDs name each request (run-batch, run_vllm_offline.py); nil when
	// the file matches requests by send order.
	CustomIDs []string
	// TokenIDs are the generated token ids when the file records them.
	TokenIDs [][]int
	Errors   []string // "" for a success; nil when not recorded
	// InputLens are the per-request prompt lengths when recorded (used to
	// match a shuffled SGLang run to the prompts).
	InputLens []int
	// Temperature is the sampling temperature the file or its producer
	// records ("" when unknown).
	Temperature string
	// Shuffled: the producer reorders requests and names none (SGLang's
	// custom loader), so texts cannot be matched to prompts.
	Shuffled bool
}

// ReadGenerations reads the generated texts of run `run` of a result file:
// vLLM bench serve --save-detailed, SGLang bench_serving --output-details,
// run_vllm_offline.py (with requests[].text) or vllm run-batch output.
func ReadGenerations(path string, run int) (*Generations, error) {
	b, err := readResultFile(path)
	if err != nil {
		return nil, err
	}
	g, err := ParseGenerations(b, run)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	g.Path = path
	return g, nil
}

// ParseGenerations parses result bytes; see ReadGenerations.
func ParseGenerations(b []byte, run int) (*Generations, error) {
	if isRunBatch(b) {
		return parseRunBatch(b)
	}
	r, err := ParseResult(b, run)
	if err != nil {
		return nil, err
	}
	if r.Texts == nil {
		what := map[Format]string{
			VLLMServe:      "vllm bench serve writes generated_texts only with --save-detailed",
			SGLangServe:    "sglang.bench_serving writes generated_texts only with --output-details",
			VLLMThroughput: "vllm bench throughput records no texts",
			SGLangOffline:  "sglang.bench_offline_throughput records no texts",
			GoldsetOffline: "this run_vllm_offline.py predates requests[].text (rebuild the workload with a current goldset and rerun it)",
		}[r.Format]
		return nil, fmt.Errorf("%w: %s", ErrNoTexts, what)
	}
	g := &Generations{Format: r.Format, Label: r.Label, Texts: r.Texts, CustomIDs: r.CustomIDs, TokenIDs: r.TokenIDs, Errors: r.Errors, InputLens: r.InputLens}
	switch r.Format {
	case VLLMServe:
		g.Temperature = r.Recorded["temperature"] // a --metadata key, when given
	case SGLangServe:
		// The openai backends send temperature 0 (bench_serving.py).
		g.Temperature, g.Shuffled = "0", true
	case GoldsetOffline:
		g.Temperature = "0" // SamplingParams(temperature=0.0)
	}
	return g, nil
}

// isRunBatch says whether the first JSON value is a run-batch output line.
func isRunBatch(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	var m map[string]json.RawMessage
	if dec.Decode(&m) != nil {
		return false
	}
	_, a := m["custom_id"]
	_, c := m["response"]
	return a && c
}

// runBatchLine is vllm/entrypoints/openai/run_batch.py's BatchRequestOutput
// (vllm-project/vllm @ 0056ae7b2144abbc7b4916a43491c154567e0b76): {id,
// custom_id, response: {status_code, request_id, body:
// ChatCompletionResponse | null} | null, error}, one line per request in
// input order (OrderedStreamingWriter).
type runBatchLine struct {
	CustomID *string `json:"custom_id"`
	Response *struct {
		StatusCode int `json:"status_code"`
		Body       *struct {
			Choices []struct {
				Message *struct {
					Content *string `json:"content"`
				} `json:"message"`
				Text *string `json:"text"`
			} `json:"choices"`
		} `json:"body"`
	} `json:"response"`
	Error json.RawMessage `json:"error"`
}

func parseRunBatch(b []byte) (*Generations, error) {
	g := &Generations{Format: VLLMRunBatch, Label: "vllm run-batch", Temperature: "0"}
	dec := json.NewDecoder(bytes.NewReader(b))
	for i := 0; ; i++ {
		var l runBatchLine
		err := dec.Decode(&l)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: run-batch line %d: %v", ErrResult, i+1, err)
		}
		if l.CustomID == nil {
			return nil, fmt.Errorf("%w: run-batch line %d: no custom_id", ErrResult, i+1)
		}
		text, errText := "", ""
		switch {
		case len(l.Error) > 0 && string(l.Error) != "null":
			errText = string(l.Error)
		case l.Response == nil || l.Response.Body == nil:
			errText = "no response body"
		case l.Response.StatusCode != 200:
			errText = fmt.Sprintf("status %d", l.Response.StatusCode)
		case len(l.Response.Body.Choices) == 0:
			errText = "no choices"
		default:
			c := l.Response.Body.Choices[0]
			switch {
			case c.Message != nil && c.Message.Content != nil:
				text = *c.Message.Content
			case c.Text != nil:
				text = *c.Text
			default:
				errText = "choice has no message content"
			}
		}
		g.CustomIDs = append(g.CustomIDs, *l.CustomID)
		g.Texts = append(g.Texts, text)
		g.Errors = append(g.Errors, errText)
	}
	if len(g.Texts) == 0 {
		return nil, fmt.Errorf("%w: empty run-batch output", ErrResult)
	}
	return g, nil
}

func (g *Generations) failed(i int) bool { return g.Errors != nil && g.Errors[i] != "" }
