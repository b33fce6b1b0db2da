package longbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func ExampleParseTemplate() {
	t, err := ParseTemplate("qa", "Read {{carefully}}:\n{context}\nQ: {input}")
	if err != nil {
		panic(err)
	}
	s, _ := t.FormatRecord(&Record{Version: V1, Context: "The sky is blue.", Input: "Colour?"})
	fmt.Println(s)
	_, err = ParseTemplate("qa", "{context} }")
	fmt.Println(err)
	// Output:
	// Read {carefully}:
	// The sky is blue.
	// Q: Colour?
	// longbench: template "qa": single '}' encountered at byte 10: bad prompt template
}

func ExampleApplyChat() {
	fmt.Printf("%q\n", ApplyChat("Hi", true))
	// Output:
	// "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
}

func ExampleTruncateMiddle() {
	tok := byteTok{} // one token per byte
	fmt.Println(TruncateMiddle(tok, tok.Encode("BEGIN..........END"), 8))
	// Output:
	// BEGI.END
}

func ExampleScan() {
	data := `{"input": "Q?", "context": "C", "answers": ["A"], "length": 2, "dataset": "qasper", "language": "en", "all_classes": null, "_id": "x1"}
not json
`
	info, err := Scan(context.Background(), strings.NewReader(data), "qasper.jsonl", "qasper",
		ReadOptions{SkipMalformed: true, OnSkip: func(e *LineError) { fmt.Println("skip:", e.Line) }},
		func(r *Record) error {
			fmt.Println(r.Subset, r.Line, r.ID, r.Input)
			return nil
		})
	fmt.Println(info.Records, info.Skipped, err)
	// Output:
	// qasper 1 x1 Q?
	// skip: 2
	// 1 1 <nil>
}

func ExampleSelect() {
	lengths := []int{1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000}
	sel, err := Select(lengths, 4, SelectOptions{Seed: 1, TargetMean: 3000})
	if err != nil {
		panic(err)
	}
	fmt.Println(sel.Stats.Mean >= 2940 && sel.Stats.Mean <= 3060, len(sel.Indices))
	_, err = Select(lengths, 4, SelectOptions{TargetMean: 9000})
	fmt.Println(err)
	// Output:
	// true 4
	// longbench: target mean 9000.0 is above the largest achievable mean 8500.0 of 4 prompts (max length 10000): target mean unreachable
}

func ExampleHistogram() {
	fmt.Print(Histogram([]int{100, 120, 150, 300, 310, 390}, 3, 10))
	fmt.Println(ComputeStats([]int{100, 120, 150, 300, 310, 390}))
	// Output:
	//     100-196     |##########| 3
	//     197-293     |          | 0
	//     294-390     |##########| 3
	// n=6 min=100 p50=150 p90=390 max=390 mean=228.3
}

func ExamplePrompter_Build() {
	dir, _ := os.MkdirTemp("", "lbcfg")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, PromptFile), []byte(`{"qa": "{context}\nQ: {input}"}`), 0o644)
	os.WriteFile(filepath.Join(dir, MaxLenFile), []byte(`{"qa": 32}`), 0o644)
	cfg, _ := LoadConfig(dir)
	pr, _ := NewPrompter(cfg, byteTok{}, PromptOptions{MaxLen: 10, NoThinking: true})
	p, err := pr.Build(&Record{Version: V1, Subset: "qa", ID: "r1", Context: "abcdefghijkl", Input: "?"})
	fmt.Printf("%q %v %d %d\n", p.Text, p.Truncated, p.RawTokens, p.MaxNewTokens)
	fmt.Println(err)
	// Output:
	// "<|im_start|>user\nabcde\nQ: ?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n" true 17 32
	// <nil>
}

func ExampleBuild() {
	root, _ := os.MkdirTemp("", "lbbuild")
	defer os.RemoveAll(root)
	data := filepath.Join(root, "data")
	os.MkdirAll(filepath.Join(data, "config"), 0o755)
	var lines strings.Builder
	for i, n := range []int{100, 200, 300, 400, 500, 600} {
		fmt.Fprintf(&lines, `{"input": "q", "context": %q, "_id": "id%d"}`+"\n", strings.Repeat("x", n), i)
	}
	os.WriteFile(filepath.Join(data, "qa.jsonl"), []byte(lines.String()), 0o644)
	os.WriteFile(filepath.Join(data, "config", PromptFile), []byte(`{"qa": "{context} {input}"}`), 0o644)
	os.WriteFile(filepath.Join(data, "config", MaxLenFile), []byte(`{"qa": 16}`), 0o644)

	res, err := Build(context.Background(), BuildOptions{
		DataDir: data, Subsets: []string{"qa"}, N: 2, TargetMean: 250, Seed: 7,
		Prompt: PromptOptions{NoChat: true}, Out: filepath.Join(root, "out"), Model: "Qwen/Qwen3-8B",
	}, byteTok{}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Lengths, res.Stats.Mean)
	entries, _ := os.ReadDir(res.Out)
	for _, e := range entries {
		fmt.Println(e.Name())
	}
	// Output:
	// [202 302] 252
	// histogram.png
	// manifest.json
	// prompt_ids.jsonl
	// prompt_ids.npy
	// prompt_lens.npy
	// prompt_offsets.npy
	// run_vllm_offline.py
	// serve.jsonl
	// sglang.jsonl
	// sharegpt.json
}

func ExampleWorkloadDigest() {
	prompts := []PromptInfo{{CustomID: "qasper-a1", PromptSHA256: strings.Repeat("ab", 32), PromptTokens: 4000, MaxNewTokens: 96}}
	// sha256 of "9:qasper-a1 abab...ab 4000 96\n"
	fmt.Println(WorkloadDigest(prompts))
	// Output:
	// 436933ba600ca06958e8f3ad9cb9d04a913f37c4c98502abbdf011d23a0b2f28
}

func ExampleDollarTemplate_FormatRecord() {
	t, _ := ParseDollarTemplate("0shot.txt", "<text>\n$DOC$\n</text>\nQ: $Q$ (A) $C_A$ (B) $C_B$")
	s, _ := t.FormatRecord(&Record{Version: V2, Context: "\n  The document.  \n", Question: " Which? ", ChoiceA: "one", ChoiceB: "two"})
	fmt.Printf("%q\n", s)
	// Output:
	// "<text>\nThe document.\n</text>\nQ: Which? (A) one (B) two"
}

func ExampleReplies_Text() {
	r := NewReplies(byteTok{}) // one token per byte: the unit is "a"
	s, _ := r.Text(5)
	fmt.Println(s, len(byteTok{}.Encode(s)))
	// Output:
	// aaaaa 5
}
