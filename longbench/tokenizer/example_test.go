package tokenizer_test

import (
	"fmt"
	"os"

	"github.com/goldset/goldset/longbench/tokenizer"
)

// testdata/tiny.json is a hand-made byte-level BPE in Qwen3's layout: the
// 256 byte tokens, merges that build "hello" and " world", and two special
// tokens. Real use loads Qwen3's tokenizer.json the same way.

func ExampleLoad() {
	tk, err := tokenizer.Load("testdata/tiny.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(tk.VocabSize())
	// Output: 267
}

func ExampleFromJSON() {
	data, err := os.ReadFile("testdata/tiny.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	tk, err := tokenizer.FromJSON(data)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(tk.Encode("hello world"))
	// Output: [259 264]
}

func ExampleTokenizer_Encode() {
	tk, _ := tokenizer.Load("testdata/tiny.json")
	// Special tokens in the text map to their ids; nothing is added.
	fmt.Println(tk.Encode("<|im_start|>hello world<|im_end|>"))
	// Output: [265 259 264 266]
}

func ExampleTokenizer_Decode() {
	tk, _ := tokenizer.Load("testdata/tiny.json")
	ids := []int{265, 259, 264, 266}
	fmt.Printf("%q\n", tk.Decode(ids, false))
	fmt.Printf("%q\n", tk.Decode(ids, true))
	// Output:
	// "<|im_start|>hello world<|im_end|>"
	// "hello world"
}

func ExampleTokenizer_Count() {
	tk, _ := tokenizer.Load("testdata/tiny.json")
	fmt.Println(tk.Count("hello world"), tk.Count("hello  world 42"))
	// Output: 2 6
}

func ExampleTokenizer_TokenID() {
	tk, _ := tokenizer.Load("testdata/tiny.json")
	id, ok := tk.TokenID("<|im_end|>")
	fmt.Println(id, ok)
	id, ok = tk.TokenID("Ġworld") // vocab entries are in byte-level form
	fmt.Println(id, ok)
	// Output:
	// 266 true
	// 264 true
}

func ExampleTokenizer_VocabSize() {
	tk, _ := tokenizer.Load("testdata/tiny.json")
	fmt.Println(tk.VocabSize())
	// Output: 267
}

func ExampleTokenizer_SHA256() {
	tk, _ := tokenizer.Load("testdata/tiny.json")
	fmt.Println(tk.SHA256())
	// Output: 3485d0c32dccf5caa000372d537def5ba80c963c05a2ebb1379c5861b2583f1e
}
