package hugemem

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestAdviseMarksMapping checks in /proc/self/smaps that the memory of an
// advised buffer carries the huge-page advice ("hg" in VmFlags), and that a
// buffer too small to hold a whole huge page is left alone.
func TestAdviseMarksMapping(t *testing.T) {
	big := make([]uint16, 8<<20) // 16 MiB
	Advise(big)
	mid := uintptr(unsafe.Pointer(&big[len(big)/2]))
	if !strings.Contains(vmFlags(t, mid), " hg") {
		t.Errorf("the advised buffer's mapping lacks the hg flag: %q", vmFlags(t, mid))
	}
	small := make([]byte, hugePage) // cannot hold two whole huge pages
	Advise(small)
	Advise([]float64(nil))
	_ = small
}

// vmFlags returns the VmFlags line of the mapping holding addr.
func vmFlags(t *testing.T, addr uintptr) string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := rangeOf(line); ok {
			in = addr >= lo && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.TrimPrefix(line, "VmFlags:")
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return ""
}

func rangeOf(line string) (lo, hi uintptr, ok bool) {
	field, _, _ := strings.Cut(line, " ")
	a, b, found := strings.Cut(field, "-")
	if !found {
		return 0, 0, false
	}
	l, err1 := strconv.ParseUint(a, 16, 64)
	h, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uintptr(l), uintptr(h), true
}
