package longbench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"unicode/utf8"

	"github.com/goldset/goldset/internal/safefile"
)

// Version selects the LongBench record schema.
type Version int

// LongBench schemas.
const (
	V1 Version = 1 // THUDM/LongBench: input, context, answers, length, dataset, language, all_classes, _id
	V2 Version = 2 // THUDM/LongBench-v2: _id, domain, sub_domain, difficulty, length, question, choice_A..D, answer, context
)

func (v Version) String() string {
	switch v {
	case V1:
		return "v1"
	case V2:
		return "v2"
	}
	return "v" + strconv.Itoa(int(v))
}

// DefaultMaxLineBytes caps one JSONL line. The longest LongBench v1 line is a
// few MB; v2 contexts reach ~10 MB.
const DefaultMaxLineBytes = 64 << 20

// Record is one LongBench record. Fields of the other version stay empty.
type Record struct {
	Version Version
	Subset  string // file stem the record was read from
	Line    int    // 1-based line number in that file

	ID      string // _id
	Context string

	// v1
	Input      string
	Answers    []string
	Length     json.Number // v1: word count as written in the file ("" if absent)
	Dataset    string
	Language   string
	AllClasses []string

	// v2
	Domain      string
	SubDomain   string
	Difficulty  string
	LengthClass string // v2 "length": short, medium or long
	Question    string
	ChoiceA     string
	ChoiceB     string
	ChoiceC     string
	ChoiceD     string
	Answer      string
}

// fieldsV1 and fieldsV2 are the record keys a template may name, as Python's
// prompt_format.format(**json_obj) would see them.
var (
	fieldsV1 = []string{"input", "context", "answers", "length", "dataset", "language", "all_classes", "_id"}
	fieldsV2 = []string{"_id", "domain", "sub_domain", "difficulty", "length", "question", "choice_A", "choice_B", "choice_C", "choice_D", "answer", "context"}
)

// Field returns the value of a record key for template formatting. List
// fields (answers, all_classes) are refused with ErrTemplate because Python
// would format their repr, which goldset does not reproduce.
func (r *Record) Field(name string) (string, error) {
	if r.Version == V2 {
		switch name {
		case "_id":
			return r.ID, nil
		case "context":
			return r.Context, nil
		case "domain":
			return r.Domain, nil
		case "sub_domain":
			return r.SubDomain, nil
		case "difficulty":
			return r.Difficulty, nil
		case "length":
			return r.LengthClass, nil
		case "question":
			return r.Question, nil
		case "choice_A":
			return r.ChoiceA, nil
		case "choice_B":
			return r.ChoiceB, nil
		case "choice_C":
			return r.ChoiceC, nil
		case "choice_D":
			return r.ChoiceD, nil
		case "answer":
			return r.Answer, nil
		}
		return "", fmt.Errorf("field %q: %w", name, ErrUnknownField)
	}
	switch name {
	case "input":
		return r.Input, nil
	case "context":
		return r.Context, nil
	case "dataset":
		return r.Dataset, nil
	case "language":
		return r.Language, nil
	case "_id":
		return r.ID, nil
	case "length":
		return r.Length.String(), nil
	case "answers", "all_classes":
		return "", fmt.Errorf("field %q is a list; only string fields can be formatted: %w", name, ErrTemplate)
	}
	return "", fmt.Errorf("field %q: %w", name, ErrUnknownField)
}

// ParseLine decodes one JSONL line into a Record of version v. Keys match
// exactly (as in Python); unknown keys are ignored; a duplicated key keeps its
// last value. Errors wrap ErrMalformed. Subset and Line are left zero.
func ParseLine(v Version, line []byte) (Record, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if obj == nil {
		return Record{}, fmt.Errorf("%w: not a JSON object", ErrMalformed)
	}
	p := fieldParser{obj: obj}
	r := Record{Version: v}
	switch v {
	case V1:
		r.ID = p.str("_id", true)
		r.Input = p.str("input", true)
		r.Context = p.str("context", true)
		r.Dataset = p.str("dataset", false)
		r.Language = p.str("language", false)
		r.Answers = p.strList("answers")
		r.AllClasses = p.strList("all_classes")
		r.Length = p.number("length")
	case V2:
		r.ID = p.str("_id", true)
		r.Context = p.str("context", true)
		r.Question = p.str("question", true)
		r.ChoiceA = p.str("choice_A", true)
		r.ChoiceB = p.str("choice_B", true)
		r.ChoiceC = p.str("choice_C", true)
		r.ChoiceD = p.str("choice_D", true)
		r.Answer = p.str("answer", false)
		r.Domain = p.str("domain", false)
		r.SubDomain = p.str("sub_domain", false)
		r.Difficulty = p.str("difficulty", false)
		r.LengthClass = p.str("length", false)
	default:
		return Record{}, fmt.Errorf("longbench: version %d: %w", int(v), ErrOptions)
	}
	if p.err != nil {
		return Record{}, p.err
	}
	return r, nil
}

// fieldParser keeps the first field error so ParseLine reads linearly.
type fieldParser struct {
	obj map[string]json.RawMessage
	err error
}

func (p *fieldParser) fail(key, msg string) {
	if p.err == nil {
		p.err = fmt.Errorf("%w: field %q %s", ErrMalformed, key, msg)
	}
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func (p *fieldParser) str(key string, required bool) string {
	raw, ok := p.obj[key]
	if !ok || isNull(raw) {
		if required {
			p.fail(key, "is missing")
		}
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		p.fail(key, "is not a string")
		return ""
	}
	return s
}

func (p *fieldParser) strList(key string) []string {
	raw, ok := p.obj[key]
	if !ok || isNull(raw) {
		return nil
	}
	var l []string
	if err := json.Unmarshal(raw, &l); err != nil {
		p.fail(key, "is not a list of strings")
		return nil
	}
	return l
}

func (p *fieldParser) number(key string) json.Number {
	raw, ok := p.obj[key]
	if !ok || isNull(raw) {
		return ""
	}
	var n json.Number
	// json.Number would also accept a quoted number; Python would not
	// treat that as a number.
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '"' {
		p.fail(key, "is not a number")
		return ""
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		p.fail(key, "is not a number")
		return ""
	}
	return n
}

// ReadOptions control the JSONL readers.
type ReadOptions struct {
	Version Version // V1 when zero
	// SkipMalformed skips bad lines (reporting each to OnSkip) instead of
	// failing on the first one.
	SkipMalformed bool
	// MaxLineBytes caps one line; DefaultMaxLineBytes when zero.
	MaxLineBytes int
	// OnSkip, if set, is called for every skipped line.
	OnSkip func(*LineError)
	// LossyUTF8 reads lines holding invalid UTF-8 with each bad byte
	// replaced by U+FFFD (what encoding/json does) and counts them in
	// FileInfo.LossyUTF8Lines; without it such a line is an error wrapping
	// ErrInvalidUTF8 naming the file, line and byte offset.
	LossyUTF8 bool
}

// ErrInvalidUTF8: a JSONL line holds bytes that are not UTF-8 (JSON text
// must be UTF-8; decoding would silently replace them). Returned wrapped in
// a *LineError.
var ErrInvalidUTF8 = errors.New("invalid UTF-8")

func (o ReadOptions) version() Version {
	if o.Version == 0 {
		return V1
	}
	return o.Version
}

// FileInfo describes a JSONL file that was read in full.
type FileInfo struct {
	Subset  string `json:"subset"`
	Path    string `json:"path"`
	SHA256  string `json:"sha256"`
	Bytes   int64  `json:"bytes"`
	Records int    `json:"records"`
	Skipped int    `json:"skipped"`
	// LossyUTF8Lines counts lines read with invalid UTF-8 replaced by
	// U+FFFD (ReadOptions.LossyUTF8); their token counts use the replaced text.
	LossyUTF8Lines int `json:"lossy_utf8_lines,omitempty"`
}

// SubsetPath is the file holding subset in dir: <dir>/<subset>.jsonl.
func SubsetPath(dir, subset string) string {
	return filepath.Join(dir, subset+".jsonl")
}

// ReadSubset streams <dir>/<subset>.jsonl; see ReadFile.
func ReadSubset(ctx context.Context, dir, subset string, opts ReadOptions, fn func(*Record) error) (FileInfo, error) {
	return ReadFile(ctx, SubsetPath(dir, subset), subset, opts, fn)
}

// ReadFile streams the records of a JSONL file, calling fn for each in file
// order, and returns the file's size and sha256 (computed in the same pass).
// A missing file yields an error wrapping ErrMissingSubset that names the
// path. An error from fn stops reading and is returned as is.
func ReadFile(ctx context.Context, path, subset string, opts ReadOptions, fn func(*Record) error) (FileInfo, error) {
	f, err := safefile.Open(path) // a regular file: a FIFO would block, a link redirect
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return FileInfo{}, fmt.Errorf("longbench: subset %q: no file %s: %w", subset, path, ErrMissingSubset)
		}
		return FileInfo{}, fmt.Errorf("longbench: subset %q: %w", subset, err)
	}
	defer f.Close()
	return Scan(ctx, f, path, subset, opts, fn)
}

// Scan is ReadFile on an io.Reader; name is used in errors and FileInfo.Path.
func Scan(ctx context.Context, r io.Reader, name, subset string, opts ReadOptions, fn func(*Record) error) (FileInfo, error) {
	maxLine := opts.MaxLineBytes
	if maxLine <= 0 {
		maxLine = DefaultMaxLineBytes
	}
	v := opts.version()
	h := sha256.New()
	cr := &countingReader{r: io.TeeReader(r, h)}
	br := bufio.NewReaderSize(cr, 1<<20)
	info := FileInfo{Subset: subset, Path: name}
	var buf []byte
	var lineStart int64 // file offset of the current line
	for lineNo := 1; ; lineNo++ {
		if lineNo&63 == 0 {
			if err := ctx.Err(); err != nil {
				return info, err
			}
		}
		line, tooLong, eof, consumed, err := readLine(br, buf[:0], maxLine)
		buf = line[:0]
		if err != nil {
			return info, fmt.Errorf("longbench: read %s: %w", name, err)
		}
		start := lineStart
		lineStart += consumed
		if !tooLong && !utf8.Valid(line) {
			col := invalidUTF8At(line)
			if !opts.LossyUTF8 {
				return info, &LineError{Path: name, Line: lineNo, Err: fmt.Errorf("%w at byte offset %d of the file (byte %d of the line); fix the file or pass --lossy-utf8 to read it with U+FFFD replacements", ErrInvalidUTF8, start+int64(col), col+1)}
			}
			info.LossyUTF8Lines++
		}
		if eof && len(line) == 0 && !tooLong {
			break
		}
		var rec Record
		var perr error
		if tooLong {
			perr = fmt.Errorf("%w (more than %d bytes)", ErrLineTooLong, maxLine)
		} else {
			if lineNo == 1 {
				line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
			}
			if len(bytes.TrimSpace(line)) == 0 {
				if eof {
					break
				}
				continue // blank lines carry no record
			}
			rec, perr = ParseLine(v, line)
		}
		if perr != nil {
			le := &LineError{Path: name, Line: lineNo, Err: perr}
			if !opts.SkipMalformed {
				return info, le
			}
			info.Skipped++
			if opts.OnSkip != nil {
				opts.OnSkip(le)
			}
		} else {
			rec.Subset = subset
			rec.Line = lineNo
			info.Records++
			if err := fn(&rec); err != nil {
				return info, err
			}
		}
		if eof {
			break
		}
	}
	info.Bytes = cr.n
	info.SHA256 = hex.EncodeToString(h.Sum(nil))
	return info, nil
}

// readLine appends the next line (without its '\n') to buf. When the line
// exceeds max bytes, the rest of it is consumed and tooLong is set. eof is set
// when the input ended (the returned line may still hold a final line without
// '\n').
func readLine(br *bufio.Reader, buf []byte, max int) (line []byte, tooLong, eof bool, consumed int64, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		consumed += int64(len(chunk))
		if !tooLong {
			if len(buf)+len(chunk) > max+1 { // +1 for the '\n'
				tooLong = true
				buf = buf[:0]
			} else {
				buf = append(buf, chunk...)
			}
		}
		switch err {
		case nil:
			if !tooLong {
				buf = buf[:len(buf)-1]
			}
			return buf, tooLong, false, consumed, nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if !tooLong && len(buf) > max {
				tooLong, buf = true, buf[:0]
			}
			return buf, tooLong, true, consumed, nil
		default:
			return buf, tooLong, false, consumed, err
		}
	}
}

// invalidUTF8At returns the index of the first byte of b that does not
// start a valid UTF-8 sequence.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
