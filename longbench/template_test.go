package longbench

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func fieldMap(m map[string]string) func(string) (string, error) {
	return func(f string) (string, error) {
		if v, ok := m[f]; ok {
			return v, nil
		}
		return "", errors.New("field " + f + ": " + ErrUnknownField.Error())
	}
}

func TestFormatTemplate(t *testing.T) {
	fields := map[string]string{"context": "CTX {x}", "input": "IN"}
	tests := []struct {
		name, tmpl, want, wantErr string
	}{
		{name: "plain", tmpl: "no fields", want: "no fields"},
		{name: "empty", tmpl: "", want: ""},
		{name: "fields", tmpl: "A: {context}\n\nQ: {input}\nAnswer:", want: "A: CTX {x}\n\nQ: IN\nAnswer:"},
		{name: "repeated", tmpl: "{input}{input}", want: "ININ"},
		{name: "escapes", tmpl: "{{context}} {{{input}}} }}{{", want: "{context} {IN} }{"},
		{name: "unicode", tmpl: "问题：{input}\n回答：", want: "问题：IN\n回答："},
		{name: "conversion s", tmpl: "{input!s}", want: "IN"},
		{name: "empty spec", tmpl: "{input:}", want: "IN"},
		{name: "conversion s and empty spec", tmpl: "{input!s:}", want: "IN"},
		{name: "single close", tmpl: "a } b", wantErr: "single '}'"},
		{name: "trailing close", tmpl: "a {input}}", wantErr: "single '}'"},
		{name: "unclosed", tmpl: "a {input", wantErr: "expected '}'"},
		{name: "lone open at end", tmpl: "a {", wantErr: "expected '}'"},
		{name: "positional", tmpl: "{}", wantErr: "positional"},
		{name: "numbered", tmpl: "{0}", wantErr: "positional"},
		{name: "attribute", tmpl: "{input.upper}", wantErr: "attribute"},
		{name: "index", tmpl: "{input[0]}", wantErr: "attribute or index"},
		{name: "repr", tmpl: "{input!r}", wantErr: "conversion !r"},
		{name: "spec", tmpl: "{input:>10}", wantErr: "format spec"},
		{name: "nested", tmpl: "{input:{w}}", wantErr: "nested"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tp, err := ParseTemplate("mytask", tc.tmpl)
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), `"mytask"`) {
					t.Fatalf("err = %v, want ErrTemplate naming mytask and containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := tp.Format(fieldMap(fields))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTemplateUnknownField(t *testing.T) {
	tp, err := ParseTemplate("mytask", "Story: {context}\nQ: {qustion}")
	if err != nil {
		t.Fatal(err)
	}
	rec := &Record{Version: V1, Context: "c"}
	_, err = tp.FormatRecord(rec)
	if !errors.Is(err, ErrUnknownField) || !strings.Contains(err.Error(), `"mytask"`) || !strings.Contains(err.Error(), `"qustion"`) {
		t.Fatalf("err = %v, want ErrUnknownField naming template and field", err)
	}
	if err := tp.CheckFields(V1); !errors.Is(err, ErrUnknownField) {
		t.Fatalf("CheckFields: %v", err)
	}
	v2, _ := ParseTemplate("v2", "{context}|{question}|{choice_A}|{choice_D}")
	if err := v2.CheckFields(V2); err != nil {
		t.Fatal(err)
	}
	if err := v2.CheckFields(V1); !errors.Is(err, ErrUnknownField) {
		t.Fatalf("v2 template on v1: %v", err)
	}
	got, err := v2.FormatRecord(&Record{Version: V2, Context: "C", Question: "Q", ChoiceA: "a", ChoiceD: "d"})
	if err != nil || got != "C|Q|a|d" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		PromptFile: `{"alpha": "A {context} {input}", "broken": "oops {", "beta_e": "E {context}"}`,
		MaxLenFile: `{"alpha": 16, "zero": 0}`,
	})
	c, err := LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Files) != 2 || c.Files[0].Path != filepath.Join(dir, PromptFile) || len(c.Files[0].SHA256) != 64 {
		t.Fatalf("files %+v", c.Files)
	}
	if _, err := c.Template("alpha"); err != nil {
		t.Fatal(err)
	}
	// LongBench-E subset names fall back to the task's entry.
	if c.Key("alpha_e") != "alpha" || c.Key("beta_e") != "beta_e" || c.Key("gamma") != "gamma" {
		t.Errorf("keys %q %q %q", c.Key("alpha_e"), c.Key("beta_e"), c.Key("gamma"))
	}
	if n, err := c.MaxGen("alpha_e"); err != nil || n != 16 {
		t.Errorf("MaxGen(alpha_e) = %d, %v", n, err)
	}
	if _, err := c.Template("broken"); !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), `"broken"`) {
		t.Errorf("broken: %v", err)
	}
	if _, err := c.Template("gamma"); !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), PromptFile) {
		t.Errorf("missing template: %v", err)
	}
	if _, err := c.MaxGen("zero"); !errors.Is(err, ErrConfig) {
		t.Errorf("zero max gen: %v", err)
	}
	if _, err := c.MaxGen("beta_e"); !errors.Is(err, ErrConfig) {
		t.Errorf("missing max gen: %v", err)
	}
	if _, err := LoadConfig(t.TempDir()); !errors.Is(err, ErrConfig) {
		t.Errorf("empty dir: %v", err)
	}
}

// The real LongBench v1 templates parse, and use only {context} and {input}.
func TestRealConfig(t *testing.T) {
	dir := sampleDir(t)
	c, err := LoadConfig(filepath.Join(dir, "config"))
	if err != nil {
		t.Fatal(err)
	}
	keys := c.Subsets()
	if len(keys) != 21 {
		t.Errorf("%d templates, LongBench v1 has 21", len(keys))
	}
	for _, k := range keys {
		tp, err := c.Template(k)
		if err != nil {
			t.Errorf("%s: %v", k, err)
			continue
		}
		if err := tp.CheckFields(V1); err != nil {
			t.Errorf("%s: %v", k, err)
		}
		for _, f := range tp.Fields() {
			if f != "context" && f != "input" {
				t.Errorf("%s uses field %q", k, f)
			}
		}
		if n, err := c.MaxGen(k); err != nil || n <= 0 {
			t.Errorf("%s: max gen %d, %v", k, n, err)
		}
	}
	gov, _ := c.Template("gov_report")
	if got := gov.Fields(); len(got) != 1 || got[0] != "context" {
		t.Errorf("gov_report fields %v (README: no {input})", got)
	}
}

func FuzzFormatTemplate(f *testing.F) {
	for _, s := range []string{"", "plain", "{context}", "{{x}}", "a}b", "{input!s:}", "{", "}", "{{{input}}}", "{a:{b}}", "{0}", "问{input}答"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		tp, err := ParseTemplate("fuzz", text)
		if err != nil {
			if !errors.Is(err, ErrTemplate) {
				t.Fatalf("error %v does not wrap ErrTemplate", err)
			}
			return
		}
		// Round trip through the canonical form.
		again, err := ParseTemplate("fuzz", tp.String())
		if err != nil {
			t.Fatalf("re-parse of %q: %v", tp.String(), err)
		}
		if again.String() != tp.String() {
			t.Fatalf("String not canonical: %q vs %q", again.String(), tp.String())
		}
		// Without braces the template is its own output.
		lookup := func(f string) (string, error) { return "<" + f + ">", nil }
		out, err := tp.Format(lookup)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.ContainsAny(text, "{}") && out != text {
			t.Fatalf("brace-free %q formatted to %q", text, out)
		}
		// Literal text survives: unescaping the input's "{{"/"}}" pairs in
		// brace-only-escape templates must match.
		if len(tp.Fields()) == 0 {
			want := strings.NewReplacer("{{", "{", "}}", "}").Replace(text)
			if out != want {
				t.Fatalf("%q formatted to %q, want %q", text, out, want)
			}
		}
	})
}
