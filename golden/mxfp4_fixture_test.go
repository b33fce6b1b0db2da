package golden_test

import (
	"bufio"
	"encoding/hex"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/goldset/goldset/golden"
)

// TestMXFP4Fixture checks the goldens against testdata/mxfp4_fixture.txt,
// written by testdata/mxfp4_fixture.py with ml_dtypes (and torch) on the
// GPU machine: each block's scale byte (the script's exact-float reading
// of ops.md 9a) and codes (ml_dtypes' RNE of the scaled values), and the
// decode of every (scale byte, code) pair to float32.
func TestMXFP4Fixture(t *testing.T) {
	f, err := os.Open("testdata/mxfp4_fixture.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	blocks, decodes := 0, map[string]int{}
	codes, scales := make([]uint8, 16*256), make([]uint8, 256)
	for i := range scales {
		scales[i] = uint8(i)
	}
	for i := range codes {
		codes[i] = uint8(2*i%16) | uint8((2*i+1)%16)<<4
	}
	dec := make([]float32, 256*32)
	if err := golden.MXFP4Dequantize(dec, codes, scales, 1, 256*32); err != nil {
		t.Fatal(err)
	}
	line := 0
	for sc.Scan() {
		line++
		fs := strings.Fields(sc.Text())
		if len(fs) == 0 || fs[0] == "#" {
			continue
		}
		switch fs[0] {
		case "block":
			if len(fs) != 3+32+1 {
				t.Fatalf("line %d: %d fields", line, len(fs))
			}
			mode, err := golden.ParseScaleMode(fs[1])
			if err != nil {
				t.Fatal(err)
			}
			wantB, _ := strconv.Atoi(fs[2])
			x := make([]float32, 32)
			for i := range x {
				v, err := strconv.ParseUint(fs[3+i], 16, 32)
				if err != nil {
					t.Fatalf("line %d: %v", line, err)
				}
				x[i] = math.Float32frombits(uint32(v))
			}
			want, err := hex.DecodeString(fs[35])
			if err != nil || len(want) != 16 {
				t.Fatalf("line %d: codes %q", line, fs[35])
			}
			c, s := make([]uint8, 16), make([]uint8, 1)
			if err := golden.MXFP4Quantize(c, s, x, 1, 32, mode); err != nil {
				t.Fatal(err)
			}
			if int(s[0]) != wantB || string(c) != string(want) {
				t.Errorf("line %d %v: scale %d codes %x, fixture %d %x", line, mode, s[0], c, wantB, want)
			}
			blocks++
		case "decode":
			b, _ := strconv.Atoi(fs[2])
			if len(fs) != 3+16 || b < 0 || b > 255 {
				t.Fatalf("line %d: bad decode line", line)
			}
			for c := range 16 {
				v, err := strconv.ParseUint(fs[3+c], 16, 32)
				if err != nil {
					t.Fatalf("line %d: %v", line, err)
				}
				want := math.Float32frombits(uint32(v))
				got := dec[b*32+c]
				if math.Float32bits(got) != uint32(v) && !(got != got && want != want) {
					t.Errorf("%s decode byte %d code %d: %v (%#08x), fixture %v (%#08x)", fs[1], b, c, got, math.Float32bits(got), want, v)
				}
			}
			decodes[fs[1]]++
		default:
			t.Fatalf("line %d: unknown record %q", line, fs[0])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if blocks < 300 || decodes["ml_dtypes"] != 256 {
		t.Errorf("fixture too small: %d blocks, decodes %v", blocks, decodes)
	}
	t.Logf("%d blocks, decodes %v", blocks, decodes)
}
