package longbench

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/goldset/goldset/internal/safefile"
)

// Template is a parsed Python str.format template restricted to named
// fields: literal text, "{{" and "}}" escapes, and "{name}" replacement
// fields (optionally "{name!s}" or "{name:}", which format a string the same).
type Template struct {
	Name string // used in errors (the dataset2prompt.json key)
	segs []segment
}

type segment struct {
	text  string // literal text, escapes already resolved
	field string // non-empty: a replacement field
}

// ParseTemplate parses text as Python's str.format does. Syntax errors and
// unsupported features (positional fields, attribute or index access, !r/!a
// conversions, format specs, nested fields) wrap ErrTemplate and name the
// template.
func ParseTemplate(name, text string) (*Template, error) {
	t := &Template{Name: name}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t.segs = append(t.segs, segment{text: lit.String()})
			lit.Reset()
		}
	}
	bad := func(format string, args ...any) (*Template, error) {
		return nil, fmt.Errorf("longbench: template %q: %s: %w", name, fmt.Sprintf(format, args...), ErrTemplate)
	}
	for i := 0; i < len(text); {
		c := text[i]
		switch c {
		case '}':
			if i+1 < len(text) && text[i+1] == '}' {
				lit.WriteByte('}')
				i += 2
				continue
			}
			return bad("single '}' encountered at byte %d", i)
		case '{':
			if i+1 < len(text) && text[i+1] == '{' {
				lit.WriteByte('{')
				i += 2
				continue
			}
			end := strings.IndexByte(text[i+1:], '}')
			if end < 0 {
				return bad("expected '}' before end of string (field opened at byte %d)", i)
			}
			body := text[i+1 : i+1+end]
			if strings.IndexByte(body, '{') >= 0 {
				return bad("nested replacement field at byte %d is not supported", i)
			}
			field, err := parseField(body)
			if err != nil {
				return bad("field {%s} at byte %d: %v", body, i, err)
			}
			flush()
			t.segs = append(t.segs, segment{field: field})
			i += end + 2
		default:
			j := i + 1
			for j < len(text) && text[j] != '{' && text[j] != '}' {
				j++
			}
			lit.WriteString(text[i:j])
			i = j
		}
	}
	flush()
	return t, nil
}

// parseField validates the inside of "{...}" and returns the field name.
func parseField(body string) (string, error) {
	name, rest := body, ""
	if k := strings.IndexAny(body, "!:"); k >= 0 {
		name, rest = body[:k], body[k:]
	}
	switch {
	case name == "":
		return "", errors.New("positional (empty) fields are not supported; name the field")
	case strings.IndexAny(name, ".[]") >= 0:
		return "", errors.New("attribute or index access is not supported")
	case name[0] >= '0' && name[0] <= '9':
		return "", errors.New("positional (numbered) fields are not supported")
	}
	if strings.HasPrefix(rest, "!") {
		conv := rest[1:]
		if k := strings.IndexByte(conv, ':'); k >= 0 {
			conv, rest = conv[:k], conv[k:]
		} else {
			rest = ""
		}
		if conv != "s" {
			return "", fmt.Errorf("conversion !%s is not supported (only !s)", conv)
		}
	}
	if rest != "" && rest != ":" {
		return "", fmt.Errorf("format spec %q is not supported", rest[1:])
	}
	return name, nil
}

// Fields lists the distinct field names in order of first use.
func (t *Template) Fields() []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range t.segs {
		if s.field != "" && !seen[s.field] {
			seen[s.field] = true
			out = append(out, s.field)
		}
	}
	return out
}

// String re-encodes the template in str.format syntax (escaping braces in
// literal text); ParseTemplate(t.String()) gives an equal template.
func (t *Template) String() string {
	var b strings.Builder
	for _, s := range t.segs {
		if s.field != "" {
			b.WriteString("{" + s.field + "}")
			continue
		}
		b.WriteString(strings.NewReplacer("{", "{{", "}", "}}").Replace(s.text))
	}
	return b.String()
}

// Format substitutes fields using lookup. Errors from lookup are wrapped with
// the template name (so an unknown field names both template and field).
func (t *Template) Format(lookup func(field string) (string, error)) (string, error) {
	vals := make([]string, len(t.segs))
	n := 0
	for i, s := range t.segs {
		if s.field == "" {
			vals[i] = s.text
		} else {
			v, err := lookup(s.field)
			if err != nil {
				return "", fmt.Errorf("longbench: template %q: %w", t.Name, err)
			}
			vals[i] = v
		}
		n += len(vals[i])
	}
	var b strings.Builder
	b.Grow(n)
	for _, v := range vals {
		b.WriteString(v)
	}
	return b.String(), nil
}

// FormatRecord formats t with the fields of rec.
func (t *Template) FormatRecord(rec *Record) (string, error) {
	return t.Format(rec.Field)
}

// CheckFields reports the first field of t that records of version v lack.
func (t *Template) CheckFields(v Version) error {
	probe := Record{Version: v}
	for _, f := range t.Fields() {
		if _, err := probe.Field(f); err != nil {
			return fmt.Errorf("longbench: template %q: %w", t.Name, err)
		}
	}
	return nil
}

// Config files, as in LongBench's config/ directory.
const (
	PromptFile = "dataset2prompt.json"
	MaxLenFile = "dataset2maxlen.json"
)

// FileDigest records a file's identity for the manifest.
type FileDigest struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
}

// Config holds LongBench's prompt templates and per-task generation lengths.
type Config struct {
	Dir       string
	mu        sync.Mutex // guards parsed
	templates map[string]string
	parsed    map[string]*Template
	maxGen    map[string]int
	Files     []FileDigest // dataset2prompt.json then dataset2maxlen.json
}

// MaxConfigBytes bounds dataset2prompt.json, dataset2maxlen.json and a v2
// prompt file, checked before reading: LongBench's are a few KB.
const MaxConfigBytes = 4 << 20

// LoadConfig reads dir/dataset2prompt.json and dir/dataset2maxlen.json.
// Templates are parsed lazily, so a broken template only matters when used.
func LoadConfig(dir string) (*Config, error) {
	c := &Config{Dir: dir, parsed: map[string]*Template{}}
	if err := readJSONFile(filepath.Join(dir, PromptFile), &c.templates, &c.Files); err != nil {
		return nil, err
	}
	if err := readJSONFile(filepath.Join(dir, MaxLenFile), &c.maxGen, &c.Files); err != nil {
		return nil, err
	}
	return c, nil
}

func readJSONFile(path string, dst any, digests *[]FileDigest) error {
	data, err := safefile.ReadFile(path, MaxConfigBytes)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("longbench: config file %s not found (set the templates directory): %w", path, ErrConfig)
		}
		return fmt.Errorf("longbench: config %s: %w", path, err)
	}
	if err := json.Unmarshal(data, dst); err != nil {
		return fmt.Errorf("longbench: config %s: %v: %w", path, err, ErrConfig)
	}
	sum := sha256.Sum256(data)
	*digests = append(*digests, FileDigest{Path: path, SHA256: hex.EncodeToString(sum[:]), Bytes: int64(len(data))})
	return nil
}

// Key maps a subset name to its config key: the name itself, or for
// LongBench-E files ("<task>_e") the task name when only that is present.
func (c *Config) Key(subset string) string {
	if _, ok := c.templates[subset]; ok {
		return subset
	}
	if base, ok := strings.CutSuffix(subset, "_e"); ok {
		if _, ok := c.templates[base]; ok {
			return base
		}
	}
	return subset
}

// Template returns the parsed template for a subset.
func (c *Config) Template(subset string) (*Template, error) {
	key := c.Key(subset)
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.parsed[key]; ok {
		return t, nil
	}
	text, ok := c.templates[key]
	if !ok {
		return nil, fmt.Errorf("longbench: no template for subset %q in %s: %w", subset, filepath.Join(c.Dir, PromptFile), ErrTemplate)
	}
	t, err := ParseTemplate(key, text)
	if err != nil {
		return nil, err
	}
	c.parsed[key] = t
	return t, nil
}

// MaxGen returns the subset's maximum generation length (dataset2maxlen.json).
func (c *Config) MaxGen(subset string) (int, error) {
	key := c.Key(subset)
	n, ok := c.maxGen[key]
	if !ok {
		return 0, fmt.Errorf("longbench: no max generation length for subset %q in %s: %w", subset, filepath.Join(c.Dir, MaxLenFile), ErrConfig)
	}
	if n <= 0 {
		return 0, fmt.Errorf("longbench: max generation length %d for subset %q in %s: %w", n, subset, filepath.Join(c.Dir, MaxLenFile), ErrConfig)
	}
	return n, nil
}

// Subsets lists the template keys in sorted order.
func (c *Config) Subsets() []string {
	keys := make([]string, 0, len(c.templates))
	for k := range c.templates {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// V2Placeholders are LongBench v2's prompt placeholders in the order its
// pred.py replaces them, with the record field each takes.
var V2Placeholders = []struct{ Placeholder, Field string }{
	{"$DOC$", "context"}, {"$Q$", "question"},
	{"$C_A$", "choice_A"}, {"$C_B$", "choice_B"}, {"$C_C$", "choice_C"}, {"$C_D$", "choice_D"},
}

// DollarTemplate is a LongBench v2 prompt file (prompts/0shot.txt and
// friends): placeholders $DOC$, $Q$, $C_A$..$C_D$, filled as v2's pred.py
// does: template.replace('$DOC$', context.strip()).replace('$Q$',
// question.strip())... in that order, each a Python str.replace of every
// occurrence in the string built so far (so a context that itself contains
// "$Q$" is changed by the next step, exactly as in pred.py), each field
// stripped of leading and trailing whitespace as Python's str.strip() does.
type DollarTemplate struct {
	Name string // the file, for errors and the manifest
	Text string
}

// ParseDollarTemplate checks that text uses at least $DOC$ (a template
// without the document would build prompts without the context).
func ParseDollarTemplate(name, text string) (*DollarTemplate, error) {
	if !strings.Contains(text, "$DOC$") {
		return nil, fmt.Errorf("longbench: v2 template %s has no $DOC$ placeholder: %w", name, ErrTemplate)
	}
	return &DollarTemplate{Name: name, Text: text}, nil
}

// LoadDollarTemplate reads a LongBench v2 prompt file as pred.py's
// open(path, encoding='utf-8').read() does: text mode, so "\r\n" and "\r"
// become "\n" (universal newlines). The digest is of the file's bytes.
func LoadDollarTemplate(path string) (*DollarTemplate, FileDigest, error) {
	data, err := safefile.ReadFile(path, MaxConfigBytes)
	if err != nil {
		return nil, FileDigest{}, fmt.Errorf("longbench: v2 template: %w", err)
	}
	if !utf8.Valid(data) {
		return nil, FileDigest{}, fmt.Errorf("longbench: v2 template %s is not UTF-8: %w", path, ErrTemplate)
	}
	text := strings.ReplaceAll(strings.ReplaceAll(string(data), "\r\n", "\n"), "\r", "\n")
	t, err := ParseDollarTemplate(path, text)
	if err != nil {
		return nil, FileDigest{}, err
	}
	sum := sha256.Sum256(data)
	return t, FileDigest{Path: path, SHA256: hex.EncodeToString(sum[:]), Bytes: int64(len(data))}, nil
}

// FormatRecord fills the placeholders from rec.
func (t *DollarTemplate) FormatRecord(rec *Record) (string, error) {
	s := t.Text
	for _, ph := range V2Placeholders {
		v, err := rec.Field(ph.Field)
		if err != nil {
			return "", fmt.Errorf("longbench: template %q: %w", t.Name, err)
		}
		s = strings.ReplaceAll(s, ph.Placeholder, PyStrip(v))
	}
	return s, nil
}

// CheckFields fails unless records of version v have the v2 fields.
func (t *DollarTemplate) CheckFields(v Version) error {
	if v != V2 {
		return fmt.Errorf("longbench: template %q: $DOC$ templates need LongBench v2 records (--v2): %w", t.Name, ErrTemplate)
	}
	probe := Record{Version: v}
	for _, ph := range V2Placeholders {
		if _, err := probe.Field(ph.Field); err != nil {
			return fmt.Errorf("longbench: template %q: %w", t.Name, err)
		}
	}
	return nil
}

// PyStrip is Python's str.strip() with no argument: it removes leading and
// trailing characters for which str.isspace() is true, which are Go's
// unicode.IsSpace plus the separators U+001C..U+001F.
func PyStrip(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) })
}
