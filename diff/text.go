package diff

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteText writes a readable summary: the counts, then one line per change
// ("~" changed, "+" added, "-" removed), in report order.
func (r *Report) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	c := r.Counts
	if r.Identical() {
		fmt.Fprintf(bw, "identical: %d cases, %d tensors\n", c.Cases.Unchanged, c.Tensors.Unchanged)
		return bw.Flush()
	}
	fmt.Fprintf(bw, "cases:   %s\n", tallyText(c.Cases))
	fmt.Fprintf(bw, "tensors: %s\n", tallyText(c.Tensors))
	if r.hasValues() {
		fmt.Fprintf(bw, "relative changes are |new - old| / max(|old|, %g)\n", r.RelFloor)
	}
	for _, ch := range r.Manifest {
		fmt.Fprintf(bw, "~ manifest %s\n", ch)
	}
	for _, cd := range r.Cases {
		switch cd.Status {
		case StatusAdded, StatusRemoved:
			fmt.Fprintf(bw, "%s case %s (%s, %s)\n", mark(cd.Status), cd.ID, cd.Op, plural(len(cd.Tensors), "tensor"))
			continue
		}
		for _, ch := range cd.Changes {
			fmt.Fprintf(bw, "~ case %s: %s\n", cd.ID, ch)
		}
		for _, td := range cd.Tensors {
			writeTensor(bw, cd.ID, &td)
		}
	}
	return bw.Flush()
}

func tallyText(t Tally) string {
	return fmt.Sprintf("%d unchanged, %d changed, %d added, %d removed", t.Unchanged, t.Changed, t.Added, t.Removed)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

func mark(status string) string {
	switch status {
	case StatusAdded:
		return "+"
	case StatusRemoved:
		return "-"
	}
	return "~"
}

func writeTensor(w io.Writer, caseID string, td *TensorDiff) {
	name := caseID + "/" + td.Name
	if td.Status != StatusChanged {
		fmt.Fprintf(w, "%s tensor %s (%s %s %s)\n", mark(td.Status), name, td.Role, td.DType, indexText(td.Shape))
		return
	}
	for _, ch := range td.Changes {
		fmt.Fprintf(w, "~ tensor %s: %s\n", name, ch)
	}
	switch {
	case td.Values != nil:
		fmt.Fprintf(w, "~ tensor %s: values: %s\n", name, valuesText(td.Values))
	case td.DataChanged:
		fmt.Fprintf(w, "~ tensor %s: data changed, values not compared: %s\n", name, td.ValuesSkipped)
	}
}

func valuesText(v *Values) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d elements changed (%s%%)", v.Changed, v.Elements, strconv.FormatFloat(100*v.Share, 'g', 4, 64))
	if v.Changed == 0 {
		b.WriteString(", the files differ only outside the element values")
		return b.String()
	}
	if v.Worst != nil {
		fmt.Fprintf(&b, ", max abs %s at %s, max rel %s at %s",
			numText(v.MaxAbs), indexText(v.Worst), numText(v.MaxRel), indexText(v.MaxRelAt))
	}
	fmt.Fprintf(&b, ", first at %s", indexText(v.First))
	if v.NaNMismatch > 0 || v.InfMismatch > 0 {
		fmt.Fprintf(&b, ", %d NaN and %d Inf mismatches (first at %s)", v.NaNMismatch, v.InfMismatch, indexText(v.FirstNonFinite))
	}
	return b.String()
}

func numText(x Number) string { return strconv.FormatFloat(float64(x), 'g', 4, 64) }

func indexText(idx []int64) string {
	parts := make([]string, len(idx))
	for i, d := range idx {
		parts[i] = strconv.FormatInt(d, 10)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func (r *Report) hasValues() bool {
	for _, cd := range r.Cases {
		for _, td := range cd.Tensors {
			if td.Values != nil && td.Values.Changed > 0 {
				return true
			}
		}
	}
	return false
}
