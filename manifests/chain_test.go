package manifests

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// chainManifest is a valid manifest with one two-step, two-stage chain
// whose later stages list the earlier goldens' files, and a case alone.
func chainManifest() *Manifest {
	sha := func(c byte) string { return strings.Repeat(string(c), 64) }
	tensor := func(name, role, path string, h byte) Tensor {
		return Tensor{Name: name, Role: role, Path: path, DType: "bfloat16", Shape: []int64{4, 2}, SHA256: sha(h), Bytes: 144}
	}
	ref := func(step, stage int) *ChainRef { return &ChainRef{ID: "ch", Step: step, Stage: stage} }
	m := &Manifest{SchemaVersion: 1, Suite: "s", Seed: 1, Cases: []Case{
		{ID: "alone", Op: "matmul", Split: "public", Params: json.RawMessage(`{}`), Tensors: []Tensor{tensor("a", RoleInput, "alone/a.npy", 'a')}},
		{ID: "ch.s3.w", Op: "write", Split: "public", Params: json.RawMessage(`{}`), Chain: ref(3, 0), Tensors: []Tensor{
			tensor("cache", RoleInput, "ch.s3.w/cache.npy", '0'), tensor("cache_out", RoleGolden, "ch.s3.w/cache_out.npy", '1')}},
		{ID: "ch.s3.a", Op: "attend", Split: "public", Params: json.RawMessage(`{}`), Chain: ref(3, 1), Tensors: []Tensor{
			tensor("cache", RoleInput, "ch.s3.w/cache_out.npy", '1'), tensor("out", RoleGolden, "ch.s3.a/out.npy", '2')}},
		{ID: "ch.s4.w", Op: "write", Split: "public", Params: json.RawMessage(`{}`), Chain: ref(4, 0), Tensors: []Tensor{
			tensor("cache", RoleInput, "ch.s3.w/cache_out.npy", '1'), tensor("cache_out", RoleGolden, "ch.s4.w/cache_out.npy", '3')}},
		{ID: "ch.s4.a", Op: "attend", Split: "public", Params: json.RawMessage(`{}`), Chain: ref(4, 1), Tensors: []Tensor{
			tensor("cache", RoleInput, "ch.s4.w/cache_out.npy", '3'), tensor("out", RoleGolden, "ch.s4.a/out.npy", '4')}},
	}, Chains: []Chain{{ID: "ch", Split: "public", Kind: "k", Stages: []string{"write", "attend"}, Steps: []int{3, 4}, Params: json.RawMessage(`{"chain":"k"}`)}}}
	return m
}

func TestChainValidate(t *testing.T) {
	if err := chainManifest().Validate(); err != nil {
		t.Fatalf("valid chain manifest: %v", err)
	}
	for _, tc := range []struct {
		name, want string
		edit       func(m *Manifest)
	}{
		{"unlisted chain", "does not list", func(m *Manifest) { m.Chains = nil }},
		{"chain twice", "listed twice", func(m *Manifest) { m.Chains = append(m.Chains, m.Chains[0]) }},
		{"missing stage case", "stage cases", func(m *Manifest) { m.Cases = m.Cases[:4] }},
		{"stage order", "step 3 stage 0", func(m *Manifest) { m.Cases[1].Chain.Stage = 1 }},
		{"wrong op", `stage 1 is "attend"`, func(m *Manifest) { m.Cases[2].Op = "other" }},
		{"wrong split", "split", func(m *Manifest) { m.Cases[3].Split = "benchmark" }},
		{"steps not increasing", "not increasing", func(m *Manifest) { m.Chains[0].Steps = []int{4, 3} }},
		{"no stages", "no stages", func(m *Manifest) { m.Chains[0].Stages = nil }},
		{"bad params", "JSON object", func(m *Manifest) { m.Chains[0].Params = json.RawMessage(`[]`) }},
		{"bad chain id", "chain id", func(m *Manifest) { m.Chains[0].ID = "../x" }},
		{"not consecutive", "step 4 stage 0 here", func(m *Manifest) {
			m.Cases = append([]Case{m.Cases[1], m.Cases[2], m.Cases[0]}, m.Cases[3:]...)
		}},
		{"chain without cases", "has no cases", func(m *Manifest) {
			m.Chains = append(m.Chains, Chain{ID: "other", Split: "public", Stages: []string{"x"}, Steps: []int{0}, Params: json.RawMessage(`{}`)})
		}},
		// A shared file must be the same file: every fact equal, an input
		// of a chain case.
		{"shared file differs", "shares path", func(m *Manifest) { m.Cases[2].Tensors[0].SHA256 = strings.Repeat("9", 64) }},
		{"shared file as golden", "shares path", func(m *Manifest) { m.Cases[2].Tensors[0].Role = RoleGolden }},
		{"shared outside a chain", "shares path", func(m *Manifest) { m.Cases[0].Tensors[0].Path = "ch.s3.w/cache.npy" }},
	} {
		m := chainManifest()
		tc.edit(m)
		err := m.Validate()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrInvalid mentioning %q", tc.name, err, tc.want)
		}
	}
}

// TestChainRoundTrip: a chain manifest survives marshal and parse, and a
// manifest without chains marshals no chains field (earlier digests hold).
func TestChainRoundTrip(t *testing.T) {
	m := chainManifest()
	m.Seal()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseManifest("m.json", b)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := ComputeDigest(back); d != m.Digest || len(back.ChainCases("ch")) != 4 || back.ChainOf("ch") == nil {
		t.Fatalf("round trip: digest %s vs %s, %d chain cases", d, m.Digest, len(back.ChainCases("ch")))
	}
	plain := &Manifest{SchemaVersion: 1, Suite: "s", Cases: []Case{}}
	pb, _ := json.Marshal(plain)
	if strings.Contains(string(pb), "chain") {
		t.Errorf("a manifest without chains marshals %s", pb)
	}
}
