package longbench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

const (
	goodV1 = `{"input": "q1", "context": "c1 “quoted” é", "answers": ["a"], "length": 3, "dataset": "qasper", "language": "en", "all_classes": null, "_id": "id1", "extra": {"x": [1]}}`
	goodV2 = `{"_id": "v2a", "domain": "Single-Document QA", "sub_domain": "Academic", "difficulty": "easy", "length": "short", "question": "Q?", "choice_A": "A1", "choice_B": "B1", "choice_C": "C1", "choice_D": "D1", "answer": "B", "context": "ctx"}`
)

func scanAll(t *testing.T, content string, opts ReadOptions) ([]Record, FileInfo, []*LineError, error) {
	t.Helper()
	var recs []Record
	var skipped []*LineError
	opts.OnSkip = func(e *LineError) { skipped = append(skipped, e) }
	info, err := Scan(context.Background(), strings.NewReader(content), "mem.jsonl", "sub", opts, func(r *Record) error {
		recs = append(recs, *r)
		return nil
	})
	return recs, info, skipped, err
}

func TestScan(t *testing.T) {
	tests := []struct {
		name      string
		content   string
		opts      ReadOptions
		wantIDs   []string
		wantLines []int
		wantSkip  []int // line numbers skipped
		wantErr   string
	}{
		{name: "one v1", content: goodV1 + "\n", wantIDs: []string{"id1"}, wantLines: []int{1}},
		{name: "no final newline", content: goodV1 + "\n" + strings.Replace(goodV1, "id1", "id2", 1), wantIDs: []string{"id1", "id2"}, wantLines: []int{1, 2}},
		{name: "crlf and bom", content: "\ufeff" + goodV1 + "\r\n" + goodV1 + "\r\n", wantIDs: []string{"id1", "id1"}, wantLines: []int{1, 2}},
		{name: "blank lines", content: "\n" + goodV1 + "\n  \n" + goodV1 + "\n\n", wantIDs: []string{"id1", "id1"}, wantLines: []int{2, 4}},
		{name: "empty file", content: ""},
		{name: "malformed fatal", content: goodV1 + "\n{\"input\": \n" + goodV1 + "\n", wantErr: "mem.jsonl:2:"},
		{name: "malformed skip", content: goodV1 + "\n{\"input\": \n" + goodV1 + "\n", opts: ReadOptions{SkipMalformed: true},
			wantIDs: []string{"id1", "id1"}, wantLines: []int{1, 3}, wantSkip: []int{2}},
		{name: "missing _id", content: `{"input": "", "context": "c"}` + "\n", wantErr: `mem.jsonl:1: malformed record: field "_id" is missing`},
		{name: "context not string", content: `{"input": "", "context": 5, "_id": "x"}`, wantErr: `field "context" is not a string`},
		{name: "answers not list", content: `{"input": "", "context": "c", "_id": "x", "answers": "a"}`, wantErr: `field "answers" is not a list of strings`},
		{name: "length not number", content: `{"input": "", "context": "c", "_id": "x", "length": "7"}`, wantErr: `field "length" is not a number`},
		{name: "not an object", content: `[1, 2]`, wantErr: "mem.jsonl:1: malformed record"},
		{name: "null line", content: "null\n", wantErr: "not a JSON object"},
		{name: "key case matters", content: `{"Input": "", "context": "c", "_id": "x"}`, wantErr: `field "input" is missing`},
		{name: "v2 good", content: goodV2 + "\n", opts: ReadOptions{Version: V2}, wantIDs: []string{"v2a"}, wantLines: []int{1}},
		{name: "v2 line read as v1", content: goodV2 + "\n", wantErr: `field "input" is missing`},
		{name: "v2 missing choice", content: strings.Replace(goodV2, `"choice_D": "D1", `, "", 1), opts: ReadOptions{Version: V2}, wantErr: `field "choice_D" is missing`},
		{name: "too long fatal", content: goodV1 + "\n" + goodV1 + "\n", opts: ReadOptions{MaxLineBytes: 50}, wantErr: "mem.jsonl:1: malformed record: line too long"},
		{name: "too long skip", content: `{"input":"","context":"` + strings.Repeat("x", 200) + `","_id":"long"}` + "\n" + `{"input":"","context":"","_id":"s"}` + "\n",
			opts: ReadOptions{MaxLineBytes: 60, SkipMalformed: true}, wantIDs: []string{"s"}, wantLines: []int{2}, wantSkip: []int{1}},
		{name: "too long last line without newline", content: `{"input":"","context":"","_id":"s"}` + "\n" + `{"input":"","context":"` + strings.Repeat("y", 100) + `","_id":"l"}`,
			opts: ReadOptions{MaxLineBytes: 60}, wantErr: "mem.jsonl:2: malformed record: line too long"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Small bufio chunks are not configurable; exercise both the
			// reader and the line cap.
			recs, info, skipped, err := scanAll(t, tc.content, tc.opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tc.wantErr)
				}
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("err = %v does not wrap ErrMalformed", err)
				}
				var le *LineError
				if !errors.As(err, &le) || le.Path != "mem.jsonl" {
					t.Fatalf("err = %v is not a *LineError for mem.jsonl", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			var lines []int
			for _, r := range recs {
				ids = append(ids, r.ID)
				lines = append(lines, r.Line)
				if r.Subset != "sub" {
					t.Errorf("subset %q", r.Subset)
				}
			}
			if fmt.Sprint(ids) != fmt.Sprint(tc.wantIDs) || fmt.Sprint(lines) != fmt.Sprint(tc.wantLines) {
				t.Errorf("ids %v lines %v, want %v %v", ids, lines, tc.wantIDs, tc.wantLines)
			}
			var sk []int
			for _, e := range skipped {
				sk = append(sk, e.Line)
			}
			if fmt.Sprint(sk) != fmt.Sprint(tc.wantSkip) || info.Skipped != len(tc.wantSkip) || info.Records != len(recs) {
				t.Errorf("skipped %v (info %d, records %d), want %v", sk, info.Skipped, info.Records, tc.wantSkip)
			}
			sum := sha256.Sum256([]byte(tc.content))
			if info.SHA256 != hex.EncodeToString(sum[:]) || info.Bytes != int64(len(tc.content)) {
				t.Errorf("info %+v, want sha256 %x bytes %d", info, sum, len(tc.content))
			}
		})
	}
}

func TestParseLineFields(t *testing.T) {
	r, err := ParseLine(V1, []byte(goodV1))
	if err != nil {
		t.Fatal(err)
	}
	if r.Input != "q1" || r.Context != "c1 “quoted” é" || r.Length.String() != "3" || r.Dataset != "qasper" ||
		r.Language != "en" || len(r.Answers) != 1 || r.AllClasses != nil || r.ID != "id1" {
		t.Errorf("v1 record %+v", r)
	}
	r2, err := ParseLine(V2, []byte(goodV2))
	if err != nil {
		t.Fatal(err)
	}
	want := Record{Version: V2, ID: "v2a", Domain: "Single-Document QA", SubDomain: "Academic", Difficulty: "easy",
		LengthClass: "short", Question: "Q?", ChoiceA: "A1", ChoiceB: "B1", ChoiceC: "C1", ChoiceD: "D1", Answer: "B", Context: "ctx"}
	if fmt.Sprintf("%+v", r2) != fmt.Sprintf("%+v", want) {
		t.Errorf("v2 record\n got %+v\nwant %+v", r2, want)
	}
	for _, f := range []string{"_id", "domain", "sub_domain", "difficulty", "length", "question", "choice_A", "choice_B", "choice_C", "choice_D", "answer", "context"} {
		if _, err := r2.Field(f); err != nil {
			t.Errorf("v2 field %s: %v", f, err)
		}
	}
	if _, err := r2.Field("input"); !errors.Is(err, ErrUnknownField) {
		t.Errorf("v2 input: %v", err)
	}
	if _, err := r.Field("answers"); !errors.Is(err, ErrTemplate) {
		t.Errorf("v1 answers: %v", err)
	}
}

func TestScanHugeLine(t *testing.T) {
	// A line far larger than bufio's buffer (1 MiB) must be read whole.
	ctxText := strings.Repeat("abcdefghij", 500_000) // 5 MB
	content := `{"input":"q","context":"` + ctxText + `","_id":"big"}` + "\n" + goodV1 + "\n"
	recs, _, _, err := scanAll(t, content, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Context != ctxText || recs[1].ID != "id1" {
		t.Fatalf("got %d records", len(recs))
	}
}

func TestReadSubsetMissing(t *testing.T) {
	dir := t.TempDir()
	_, err := ReadSubset(context.Background(), dir, "nosuch", ReadOptions{}, func(*Record) error { return nil })
	if !errors.Is(err, ErrMissingSubset) || !strings.Contains(err.Error(), filepath.Join(dir, "nosuch.jsonl")) {
		t.Fatalf("err = %v", err)
	}
}

func TestReadFileCallbackError(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"s.jsonl": goodV1 + "\n" + goodV1 + "\n"})
	stop := errors.New("stop")
	n := 0
	_, err := ReadSubset(context.Background(), dir, "s", ReadOptions{}, func(*Record) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("err = %v after %d records", err, n)
	}
}

// The raw sample files: counts, ids and file hashes from the sample README.
func TestReadSample(t *testing.T) {
	dir := sampleDir(t)
	tests := []struct {
		subset string
		sha    string
		ids    []string
	}{
		{"gov_report", "5175937470d12019bd099842a97cedf3f8c99a68d8439fcd85730b68d0a6ce2c",
			[]string{"4bd6930b3b65caf89aa127d679a80294f31f9cfa7cdab703", "cbc3f7193f9fa873108c6ccc73a558eb1d2a97b249a1f930"}},
		{"hotpotqa", "668cd3927b77a91be10cc2df3da8b0c65c10b0fbe7850eb59659fb41891f9a8c",
			[]string{"fc6267db9ba02bbb251960231bc87251c581110e4e2b5f3f"}},
		{"multifieldqa_en", "ee4b455fe3fe2a6593955c2e2c7f4e899dea4851f14006a49d6804fe972c22cc",
			[]string{"c29e95ab6195406aceecf3874186150cb1b8b26db5bcd0e4", "1d46294ee8fcc0a64828778b04198fcbe4f75841775e1205", "2f73cf12085e3fb879c775fc4851b72092a060cad5a927c6"}},
		{"qasper", "016123d5776ec0e9114e96299816a8a4b70e562598a5f2e5f7dda402494e9785",
			[]string{"3ac3eef636db11635a21a61804cb28e92c546a5686dd1e12", "e419f2bff9d2ab7c3b60b3250caccd2d9ae1285ec3e8e818", "14e88916523197e066dbb743339685621db47c4beb503abb"}},
	}
	for _, tc := range tests {
		t.Run(tc.subset, func(t *testing.T) {
			var ids []string
			info, err := ReadSubset(context.Background(), dir, tc.subset, ReadOptions{}, func(r *Record) error {
				ids = append(ids, r.ID)
				if r.Dataset != tc.subset || r.Language != "en" || r.Context == "" || r.Length == "" {
					t.Errorf("record %s: dataset %q language %q length %q", r.ID, r.Dataset, r.Language, r.Length)
				}
				// README: length is a str.split word count.
				words := len(strings.Fields(r.Context))
				switch tc.subset {
				case "gov_report":
					words++
				case "hotpotqa":
					words += len(strings.Fields(r.Input)) + 1
				default:
					words += len(strings.Fields(r.Input)) + len(strings.Fields(r.Answers[0]))
				}
				if r.Length.String() != fmt.Sprint(words) {
					t.Errorf("record %s: length %s, word count %d", r.ID, r.Length, words)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(ids) != fmt.Sprint(tc.ids) || info.SHA256 != tc.sha || info.Skipped != 0 {
				t.Errorf("ids %v sha %s skipped %d", ids, info.SHA256, info.Skipped)
			}
		})
	}
}

func FuzzReadLine(f *testing.F) {
	f.Add([]byte(goodV1), uint8(1))
	f.Add([]byte(goodV2), uint8(2))
	f.Add([]byte(`{"input":"","context":"","_id":""}`), uint8(1))
	f.Add([]byte(`{"_id": null}`), uint8(2))
	f.Add([]byte("\xff\xfe"), uint8(1))
	f.Add([]byte(`{"input":"\ud800","context":"x","_id":"1","length":1e400}`), uint8(1))
	f.Fuzz(func(t *testing.T, line []byte, ver uint8) {
		v := Version(ver%2 + 1)
		r, err := ParseLine(v, line)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if r.Version != v {
			t.Fatalf("version %v, want %v", r.Version, v)
		}
		// Every schema field must be formattable or refused cleanly.
		fields := fieldsV1
		if v == V2 {
			fields = fieldsV2
		}
		for _, fld := range fields {
			if _, err := r.Field(fld); err != nil && !errors.Is(err, ErrTemplate) {
				t.Fatalf("field %s: %v", fld, err)
			}
		}
		// The same line inside a file reads back as the same record.
		recs, _, _, err := scanAll(t, string(line)+"\n", ReadOptions{Version: v})
		if err == nil && len(recs) == 1 && recs[0].ID != r.ID {
			t.Fatalf("Scan id %q, ParseLine id %q", recs[0].ID, r.ID)
		}
	})
}
