package longbench

import (
	"errors"
	"strings"
	"testing"
)

// Issue 11: invalid UTF-8 in a record is an error naming the file, line and
// byte offset (encoding/json would turn it into U+FFFD without a word), or,
// with LossyUTF8, read with replacements and counted.
func TestScanInvalidUTF8(t *testing.T) {
	good := `{"_id": "a", "input": "q", "context": "fine"}` + "\n"
	bad := `{"_id": "b", "input": "q", "context": "caf` + "\xe9" + `"}` + "\n"
	content := good + bad + good
	_, _, _, err := scanAll(t, content, ReadOptions{})
	var le *LineError
	wantOff := len(good) + strings.Index(bad, "\xe9")
	if !errors.As(err, &le) || !errors.Is(err, ErrInvalidUTF8) || le.Line != 2 ||
		!strings.Contains(err.Error(), "byte offset "+itoa(wantOff)+" of the file") || !strings.Contains(err.Error(), "mem.jsonl") {
		t.Fatalf("err = %v, want line 2, offset %d", err, wantOff)
	}
	// SkipMalformed does not hide it: the text would be silently altered.
	if _, _, _, err := scanAll(t, content, ReadOptions{SkipMalformed: true}); !errors.Is(err, ErrInvalidUTF8) {
		t.Errorf("with SkipMalformed: %v", err)
	}
	recs, info, _, err := scanAll(t, content, ReadOptions{LossyUTF8: true})
	if err != nil || len(recs) != 3 || info.LossyUTF8Lines != 1 || recs[1].Context != "caf\ufffd" {
		t.Fatalf("lossy: %d records, %d lossy lines, %q, %v", len(recs), info.LossyUTF8Lines, recs[1].Context, err)
	}
	// Valid multi-byte text and an encoded U+FFFD are not flagged.
	ok := `{"_id": "c", "input": "q", "context": "世界 ` + "\ufffd" + `"}` + "\n"
	if _, info, _, err := scanAll(t, ok, ReadOptions{}); err != nil || info.LossyUTF8Lines != 0 {
		t.Errorf("valid UTF-8: %v %d", err, info.LossyUTF8Lines)
	}
}

func itoa(n int) string {
	var b []byte
	for n >= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(append([]byte{byte('0' + n)}, b...))
}
