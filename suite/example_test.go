package suite_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/suite"
)

func ExampleBuild() {
	r := &manifests.Recipe{Name: "demo", Version: "1", SpecVersion: 1, Seed: 1, Cases: []manifests.RecipeCase{
		{ID: "mm", Op: "matmul", Split: "public", Params: json.RawMessage(`{"m": 2, "k": 8, "n": 3, "dtype": "bfloat16"}`)},
	}}
	// HashSink writes nothing; suite.BundleSink writes an atomic bundle.
	m, err := suite.Build(context.Background(), r, suite.HashSink{}, suite.Options{Jobs: 1})
	if err != nil {
		panic(err)
	}
	for _, t := range m.Cases[0].Tensors {
		fmt.Println(t.Name, t.Role, t.DType, t.Shape, t.Bytes)
	}
	fmt.Println(string(m.Cases[0].Params))
	// Output:
	// a input bfloat16 [2 8] 160
	// b input bfloat16 [8 3] 176
	// c golden bfloat16 [2 3] 140
	// c_truth truth float32 [2 3] 152
	// {"m":2,"k":8,"n":3,"dtype":"bfloat16","b_layout":"KN","scale_a":1,"scale_b":0.35355339059327373}
}

func ExampleMergeManifests() {
	r := &manifests.Recipe{Name: "demo", Version: "1", SpecVersion: 1, Cases: []manifests.RecipeCase{
		{ID: "a", Op: "softmax", Split: "public", Params: json.RawMessage(`{"m": 2, "n": 5, "dtype": "float16"}`)},
		{ID: "b", Op: "softmax", Split: "public", Params: json.RawMessage(`{"m": 3, "n": 5, "dtype": "float16"}`)},
		{ID: "c", Op: "softmax", Split: "public", Params: json.RawMessage(`{"m": 4, "n": 5, "dtype": "float16"}`)},
	}}
	whole, _ := suite.Build(context.Background(), r, suite.HashSink{}, suite.Options{})
	var shards []*manifests.Manifest
	for i := 0; i < 2; i++ {
		s, _ := suite.Build(context.Background(), r, suite.HashSink{}, suite.Options{Shard: suite.Shard{Index: i, Count: 2}})
		shards = append(shards, s)
	}
	merged, err := suite.MergeManifests(shards)
	if err != nil {
		panic(err)
	}
	a, _ := manifests.ComputeDigest(whole)
	b, _ := manifests.ComputeDigest(merged)
	fmt.Println(len(shards[0].Cases), len(shards[1].Cases), a == b)
	// Output: 2 1 true
}
