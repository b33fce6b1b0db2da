package suite

import (
	"errors"
	"fmt"
	"slices"

	"github.com/goldset/goldset/compare"
	"github.com/goldset/goldset/manifests"
)

// ErrNoChain is returned for a chain id a manifest does not list.
var ErrNoChain = errors.New("no chain")

// Candidates gives a chain judge the candidate values of one stage
// case's output: (nil, nil) when none was given; an error wrapping
// compare.ErrCandidate (a wrong shape or dtype) is judged a failure.
type Candidates func(c *manifests.Case, output string) ([]float64, error)

// GradedOutputs lists a case's golden outputs, in manifest order.
func GradedOutputs(c *manifests.Case) []string {
	var out []string
	for _, t := range c.Tensors {
		if t.Role == manifests.RoleGolden {
			out = append(out, t.Name)
		}
	}
	return out
}

// LookupChain returns the chain id of m, or an error naming the chains.
func LookupChain(m *manifests.Manifest, id string) (*manifests.Chain, error) {
	if ch := m.ChainOf(id); ch != nil {
		return ch, nil
	}
	var ids []string
	for _, ch := range m.Chains {
		ids = append(ids, ch.ID)
	}
	return nil, fmt.Errorf("bundle has %w %q (chains: %v)", ErrNoChain, id, ids)
}

// JudgeChain judges every stage case of chain id of the bundle in dir
// (JudgeOutput for each output given) and names the first stage and step
// that diverges (compare.NewChainVerdict).
func JudgeChain(dir string, m *manifests.Manifest, id string, get Candidates) (compare.ChainVerdict, error) {
	if _, err := LookupChain(m, id); err != nil {
		return compare.ChainVerdict{}, err
	}
	var stages []compare.StageVerdict
	for _, c := range m.ChainCases(id) {
		sv := compare.StageVerdict{Case: c.ID, Op: c.Op, Step: c.Chain.Step, Stage: c.Chain.Stage, Reports: []compare.Report{}}
		for _, name := range GradedOutputs(c) {
			got, err := get(c, name)
			var rep compare.Report
			switch {
			case errors.Is(err, compare.ErrCandidate):
				gt := c.Tensor(name)
				rep = compare.Report{Name: name, DType: gt.DType, Shape: gt.Shape, Status: compare.Fail, Failed: []string{err.Error()}}
			case err != nil:
				return compare.ChainVerdict{}, fmt.Errorf("case %s output %s: %w", c.ID, name, err)
			case got == nil:
				sv.Missing = append(sv.Missing, name)
				continue
			default:
				if rep, err = JudgeOutput(dir, c, name, got); err != nil {
					return compare.ChainVerdict{}, err
				}
			}
			sv.Reports = append(sv.Reports, rep)
		}
		stages = append(stages, sv)
	}
	return compare.NewChainVerdict(id, stages), nil
}

// ChainControl is a candidate for a whole chain: every stage's golden
// outputs except where a negative control of one stage's op (or a
// mistake carried through the later caches) replaces them. Judged with
// JudgeChain, its first divergence must be (Step, Stage).
type ChainControl struct {
	Name  string `json:"name"`
	Note  string `json:"note"`
	Step  int    `json:"step"`
	Stage int    `json:"stage"`
	Case  string `json:"case"`
	// Outputs replace the goldens of these stage cases (by case id).
	Outputs map[string][]ControlOutput `json:"outputs"`
}

// Candidates returns the control's candidate values: its replacements,
// else the stage's stored golden.
func (k ChainControl) Candidates(dir string) Candidates {
	return func(c *manifests.Case, output string) ([]float64, error) {
		for _, o := range k.Outputs[c.ID] {
			if o.Name == output {
				return storedValues(o), nil
			}
		}
		v, _, err := caseData{dir: dir, c: c}.floats(output)
		return v, err
	}
}

// ChainControls returns the chain negatives of chain id: a wrong cache
// write (the write op's wrong_block: reshape_and_cache's, dsa_index_cache's)
// at the chain's second step (its first when it has one), carried into the
// later steps' caches, must be reported first at that step's write stage;
// correct caches but a wrong later stage (each stage op's first negative
// other than zeros: attention, the DSA indexer's top-k) at the last step,
// at that stage; and in a graph-padded chain a write through a
// pad slot (pad_slot_write) at the first padded step, at its write stage.
func ChainControls(dir string, m *manifests.Manifest, id string) ([]ChainControl, error) {
	ch, err := LookupChain(m, id)
	if err != nil {
		return nil, err
	}
	cases := m.ChainCases(id)
	at := func(k, stage int) *manifests.Case { return cases[k*len(ch.Stages)+stage] }
	// Each case's controls are computed once: the first write stage's
	// step k is searched for wrong_block and then for pad_slot_write.
	memo := map[*manifests.Case][]Control{}
	pick := func(c *manifests.Case, want func(Control) bool) (*Control, error) {
		ctls, ok := memo[c]
		if !ok {
			var err error
			if ctls, err = Controls(dir, c); err != nil {
				return nil, err
			}
			memo[c] = ctls
		}
		i := slices.IndexFunc(ctls, want)
		if i < 0 {
			return nil, nil
		}
		return &ctls[i], nil
	}
	var out []ChainControl
	add := func(k, stage int, ctl *Control, note string, carry bool) error {
		c := at(k, stage)
		cc := ChainControl{Name: ctl.Name + "@" + c.ID, Note: note + ": " + ctl.Note, Step: c.Chain.Step, Stage: stage, Case: c.ID,
			Outputs: map[string][]ControlOutput{c.ID: ctl.Outputs}}
		if carry {
			if err := carryCache(dir, cases, ch, k, ctl, &cc); err != nil {
				return err
			}
		}
		out = append(out, cc)
		return nil
	}
	k := min(1, len(ch.Steps)-1)
	{ // every chain's first stage is a cache write with wrong_block
		ctl, err := pick(at(k, 0), func(c Control) bool { return c.Name == "wrong_block" })
		if err != nil {
			return nil, err
		}
		if ctl != nil {
			if err := add(k, 0, ctl, "a wrong cache write, carried into the later caches", true); err != nil {
				return nil, err
			}
		}
		for kk := range ch.Steps {
			ctl, err := pick(at(kk, 0), func(c Control) bool { return c.Name == "pad_slot_write" })
			if err != nil {
				return nil, err
			}
			if ctl != nil {
				if err := add(kk, 0, ctl, "graph mode: a write through a pad slot", false); err != nil {
					return nil, err
				}
				break
			}
		}
	}
	// Every later stage (the DSA chain's indexer and attention; the
	// paged and Quest chains' attention) wrong at the last step, over
	// correct caches and correct earlier stages.
	last := len(ch.Steps) - 1
	for stage := 1; stage < len(ch.Stages); stage++ {
		ctl, err := pick(at(last, stage), func(c Control) bool { return !c.Pass && c.Name != "zeros" })
		if err != nil {
			return nil, err
		}
		if ctl != nil {
			if err := add(last, stage, ctl, "correct caches, a wrong "+ch.Stages[stage], false); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// carryCache carries a wrong cache write at step k into the later
// write stages' caches: every element the control changed keeps its
// wrong value in a later cache wherever the golden did not rewrite it.
func carryCache(dir string, cases []*manifests.Case, ch *manifests.Chain, k int, ctl *Control, cc *ChainControl) error {
	n := len(ch.Stages)
	for _, o := range ctl.Outputs {
		c := cases[k*n]
		gold, _, err := caseData{dir: dir, c: c}.floats(o.Name)
		if err != nil {
			return err
		}
		bad := storedValues(o)
		for kk := k + 1; kk < len(ch.Steps); kk++ {
			later := cases[kk*n]
			lg, _, err := caseData{dir: dir, c: later}.floats(o.Name)
			if err != nil {
				return err
			}
			if len(lg) != len(gold) {
				return fmt.Errorf("case %s: %s has %d elements, %s's %d", later.ID, o.Name, len(lg), c.ID, len(gold))
			}
			for i := range lg {
				if bad[i] != gold[i] && lg[i] == gold[i] {
					lg[i] = bad[i]
				}
			}
			cc.Outputs[later.ID] = append(cc.Outputs[later.ID], ControlOutput{Name: o.Name, DType: o.DType, Shape: o.Shape, Values: lg})
		}
	}
	return nil
}
