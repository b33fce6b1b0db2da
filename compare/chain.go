package compare

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Skipped is the status of a stage none of whose outputs was judged.
const Skipped = "SKIPPED"

// StageVerdict is one stage case of a chain, judged: the reports of its
// outputs (each under its own tolerance, as for a case alone).
type StageVerdict struct {
	Case  string `json:"case"`
	Op    string `json:"op"`
	Step  int    `json:"step"`  // scheduler step index
	Stage int    `json:"stage"` // index in the chain's stages
	// Status is Pass when every judged output passes, Fail when one
	// fails, Skipped when none was given.
	Status  string   `json:"status"`
	Reports []Report `json:"reports"`
	// Missing lists the graded outputs not given (partial judging).
	Missing []string `json:"missing,omitempty"`
}

// ChainVerdict is a whole chain judged (docs/spec.md §14): every stage
// of every step, in the chain's order (step, then stage), and the first
// that diverges. Later stages are judged too, whatever an earlier one
// said: a kernel whose cache write is wrong at step s usually fails the
// attention after it, and the report shows both, naming the write.
type ChainVerdict struct {
	Chain  string `json:"chain"`
	Status string `json:"status"`
	// First is the first stage (in step, then stage order) that failed;
	// nil when none did.
	First  *StageVerdict  `json:"first_divergence"`
	Stages []StageVerdict `json:"stages"`
}

// OK reports whether every judged stage passed.
func (v ChainVerdict) OK() bool { return v.Status == Pass }

// NewChainVerdict orders the stage verdicts by step and stage, sets each
// stage's status from its reports, and names the first failure.
func NewChainVerdict(chain string, stages []StageVerdict) ChainVerdict {
	v := ChainVerdict{Chain: chain, Status: Pass, Stages: stages}
	sort.SliceStable(v.Stages, func(i, j int) bool {
		a, b := v.Stages[i], v.Stages[j]
		if a.Step != b.Step {
			return a.Step < b.Step
		}
		return a.Stage < b.Stage
	})
	judged := 0
	for i := range v.Stages {
		s := &v.Stages[i]
		s.Status = Skipped
		if len(s.Reports) > 0 {
			s.Status = Pass
			judged++
		}
		for _, r := range s.Reports {
			if !r.OK() {
				s.Status = Fail
			}
		}
		if s.Status == Fail && v.First == nil {
			v.Status = Fail
			v.First = s
		}
	}
	if judged == 0 {
		v.Status = Skipped // nothing given is not a pass
	}
	return v
}

// WriteText prints one line per stage and the first divergence.
func (v ChainVerdict) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "chain %s: %d stage case(s)\n", v.Chain, len(v.Stages))
	for _, s := range v.Stages {
		var failed []string
		for _, r := range s.Reports {
			if !r.OK() {
				failed = append(failed, r.Name)
			}
		}
		line := fmt.Sprintf("  step %-6d stage %d %-20s %-7s %s", s.Step, s.Stage, s.Op, s.Status, s.Case)
		if len(failed) > 0 {
			line += "  (failed: " + strings.Join(failed, ", ") + ")"
		}
		if len(s.Missing) > 0 {
			line += "  (not given: " + strings.Join(s.Missing, ", ") + ")"
		}
		b.WriteString(line + "\n")
	}
	if v.First != nil {
		fmt.Fprintf(&b, "first divergence: step %d, stage %d (%s), case %s\n", v.First.Step, v.First.Stage, v.First.Op, v.First.Case)
	}
	fmt.Fprintf(&b, "%s\n", v.Status)
	_, err := io.WriteString(w, b.String())
	return err
}
