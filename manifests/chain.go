package manifests

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Chain describes one pipeline case of a bundle (docs/spec.md §14): an
// ordered list of stages, each an op, run over consecutive sampled
// scheduler steps. Every stage of every step is a case of its own (its op,
// inputs and goldens, judged as any case of that op is) whose Case.Chain
// points back here; a stage's input that is an earlier stage's golden
// (reshape_and_cache's cache after the write is attention's cache, step
// s's cache after the write is step s+1's cache before it) is the same
// file, listed twice.
type Chain struct {
	// ID names the chain; it is the recipe case's id.
	ID string `json:"id"`
	// Split is the recipe case's split; every stage case has it too.
	Split string `json:"split"`
	// Kind names the chain's stage sequence ("paged", "quest", ...).
	Kind string `json:"kind"`
	// Stages are the ops of the stages, in order.
	Stages []string `json:"stages"`
	// Steps are the scheduler step indices the chain covers, increasing.
	Steps []int `json:"steps"`
	// Params are the recipe case's params with every default filled in:
	// what `goldset gen --from` rebuilds the chain from.
	Params json.RawMessage `json:"params"`
}

// ChainRef places a case in its chain: Case.Chain.
type ChainRef struct {
	ID string `json:"id"`
	// Step is the scheduler step index (one of Chain.Steps).
	Step int `json:"step"`
	// Stage indexes Chain.Stages.
	Stage int `json:"stage"`
}

// validateChains checks the chains and the cases' references to them:
// every chain is complete (one case per step and stage, in step then stage
// order, consecutive in the manifest), each case's op and split are its
// chain's, and no case names a chain the manifest does not list.
func (m *Manifest) validateChains() error {
	byID := make(map[string]*Chain, len(m.Chains))
	for i := range m.Chains {
		ch := &m.Chains[i]
		if err := checkName("chain id", ch.ID); err != nil {
			return err
		}
		if byID[ch.ID] != nil {
			return fmt.Errorf("%w: chain %q listed twice", ErrInvalid, ch.ID)
		}
		byID[ch.ID] = ch
		if len(ch.Stages) == 0 || len(ch.Steps) == 0 {
			return fmt.Errorf("%w: chain %q has no stages or no steps", ErrInvalid, ch.ID)
		}
		if len(ch.Stages) > 64 || len(ch.Steps) > 1<<16 {
			return fmt.Errorf("%w: chain %q has %d stages and %d steps (at most 64 and 65536)", ErrInvalid, ch.ID, len(ch.Stages), len(ch.Steps))
		}
		for _, op := range ch.Stages {
			if op == "" {
				return fmt.Errorf("%w: chain %q has a stage without an op", ErrInvalid, ch.ID)
			}
		}
		for k, s := range ch.Steps {
			if s < 0 || k > 0 && s <= ch.Steps[k-1] {
				return fmt.Errorf("%w: chain %q: steps %v are not increasing and non-negative", ErrInvalid, ch.ID, ch.Steps)
			}
		}
		if len(ch.Params) == 0 || ch.Params[0] != '{' {
			return fmt.Errorf("%w: chain %q: params must be a JSON object", ErrInvalid, ch.ID)
		}
	}
	// Walk the cases: a chain's cases form one run, in (step, stage) order.
	seen := make(map[string]bool)
	for i := 0; i < len(m.Cases); {
		ref := m.Cases[i].Chain
		if ref == nil {
			i++
			continue
		}
		ch := byID[ref.ID]
		if ch == nil {
			return fmt.Errorf("%w: case %q names chain %q, which the manifest does not list", ErrInvalid, m.Cases[i].ID, ref.ID)
		}
		if seen[ch.ID] {
			return fmt.Errorf("%w: chain %q: its cases are not consecutive (case %q)", ErrInvalid, ch.ID, m.Cases[i].ID)
		}
		seen[ch.ID] = true
		n := len(ch.Steps) * len(ch.Stages)
		for k := 0; k < n; k++ {
			if i+k >= len(m.Cases) {
				return fmt.Errorf("%w: chain %q has %d of its %d stage cases", ErrInvalid, ch.ID, k, n)
			}
			c := &m.Cases[i+k]
			step, stage := ch.Steps[k/len(ch.Stages)], k%len(ch.Stages)
			if c.Chain == nil || c.Chain.ID != ch.ID || c.Chain.Step != step || c.Chain.Stage != stage {
				return fmt.Errorf("%w: case %q: chain %q expects step %d stage %d here (cases in step, then stage order)", ErrInvalid, c.ID, ch.ID, step, stage)
			}
			if c.Op != ch.Stages[stage] {
				return fmt.Errorf("%w: case %q: op %q, chain %q's stage %d is %q", ErrInvalid, c.ID, c.Op, ch.ID, stage, ch.Stages[stage])
			}
			if c.Split != ch.Split {
				return fmt.Errorf("%w: case %q: split %q, its chain %q is %q", ErrInvalid, c.ID, c.Split, ch.ID, ch.Split)
			}
		}
		i += n
	}
	for _, ch := range m.Chains {
		if !seen[ch.ID] {
			return fmt.Errorf("%w: chain %q has no cases", ErrInvalid, ch.ID)
		}
	}
	return nil
}

// sameFile says whether two tensor entries describe the same file: a path
// may be listed twice only by a chain, for an earlier golden that is a
// later stage's input, with every fact about the bytes equal.
func sameFile(a, b *Tensor) bool {
	return a.Path == b.Path && a.SHA256 == b.SHA256 && a.Bytes == b.Bytes && a.DType == b.DType &&
		slices.Equal(a.Shape, b.Shape) && a.Compression == b.Compression
}

// ChainOf returns the chain with the given id, or nil.
func (m *Manifest) ChainOf(id string) *Chain {
	for i := range m.Chains {
		if m.Chains[i].ID == id {
			return &m.Chains[i]
		}
	}
	return nil
}

// ChainCases returns the cases of chain id in (step, stage) order.
func (m *Manifest) ChainCases(id string) []*Case {
	var out []*Case
	for i := range m.Cases {
		if r := m.Cases[i].Chain; r != nil && r.ID == id {
			out = append(out, &m.Cases[i])
		}
	}
	return out
}
