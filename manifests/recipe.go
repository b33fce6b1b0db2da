package manifests

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

//go:embed suites/*.json
var suiteFS embed.FS

// Splits of a suite's cases.
const (
	SplitPublic    = "public"    // inputs and goldens shipped
	SplitBenchmark = "benchmark" // timing shapes
	SplitHidden    = "hidden"    // seeds derived from a secret
	SplitEdge      = "edge"      // edge encodings (MXFP4 scale bytes 0, 1, 253-255), built on request
)

// ErrRecipe is wrapped by every recipe validation error.
var ErrRecipe = errors.New("invalid suite recipe")

// ErrUnknownSuite is returned for a suite name that is not embedded.
var ErrUnknownSuite = errors.New("unknown suite")

// Recipe is a versioned suite definition: the data `goldset gen` builds.
type Recipe struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	SpecVersion int    `json:"spec_version"`
	Seed        uint64 `json:"seed"`
	Description string `json:"description,omitempty"`
	// Default marks the suites `goldset gen` builds when none is named.
	Default bool         `json:"default,omitempty"`
	Cases   []RecipeCase `json:"cases"`
}

// RecipeCase is one case of a recipe; Params are checked by the builder of Op.
type RecipeCase struct {
	ID     string          `json:"id"`
	Op     string          `json:"op"`
	Split  string          `json:"split"`
	Params json.RawMessage `json:"params"`
	Note   string          `json:"note,omitempty"`
}

// MaxRecipeBytes bounds a recipe file, checked before it is read (the
// embedded suites' recipes are a few KB; gen --recipe).
const MaxRecipeBytes = 16 << 20

// ParseRecipe decodes and validates a recipe; name is used in errors.
func ParseRecipe(name string, data []byte) (*Recipe, error) {
	r := new(Recipe)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(r); err != nil {
		return nil, fmt.Errorf("manifests: recipe %q: %w: %v", name, ErrRecipe, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("manifests: recipe %q: %w: trailing data after the JSON object", name, ErrRecipe)
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("manifests: recipe %q: %w", name, err)
	}
	return r, nil
}

// Validate checks names, splits and uniqueness (not op parameters).
func (r *Recipe) Validate() error {
	if err := checkName("suite name", r.Name); err != nil {
		return fmt.Errorf("%w: %v", ErrRecipe, err)
	}
	if r.Version == "" {
		return fmt.Errorf("%w: suite %q has no version", ErrRecipe, r.Name)
	}
	if r.SpecVersion != 1 {
		return fmt.Errorf("%w: suite %q asks for spec version %d; this build implements spec version 1", ErrRecipe, r.Name, r.SpecVersion)
	}
	if len(r.Cases) == 0 {
		return fmt.Errorf("%w: suite %q has no cases", ErrRecipe, r.Name)
	}
	seen := make(map[string]bool)
	for i, c := range r.Cases {
		if err := checkName("case id", c.ID); err != nil {
			return fmt.Errorf("%w: case %d: %v", ErrRecipe, i, err)
		}
		if seen[c.ID] {
			return fmt.Errorf("%w: duplicate case id %q", ErrRecipe, c.ID)
		}
		seen[c.ID] = true
		switch c.Split {
		case SplitPublic, SplitBenchmark, SplitHidden, SplitEdge:
		default:
			return fmt.Errorf("%w: case %q: split %q is not public, benchmark, hidden or edge", ErrRecipe, c.ID, c.Split)
		}
		if c.Op == "" {
			return fmt.Errorf("%w: case %q has no op", ErrRecipe, c.ID)
		}
		if len(c.Params) == 0 || c.Params[0] != '{' {
			return fmt.Errorf("%w: case %q: params must be a JSON object", ErrRecipe, c.ID)
		}
	}
	return nil
}

// Suites returns the embedded suite recipes, sorted by name.
func Suites() ([]*Recipe, error) {
	names, err := fs.Glob(suiteFS, "suites/*.json")
	if err != nil {
		return nil, err
	}
	var out []*Recipe
	for _, n := range names {
		data, err := suiteFS.ReadFile(n)
		if err != nil {
			return nil, err
		}
		r, err := ParseRecipe(n, data)
		if err != nil {
			return nil, err
		}
		if want := strings.TrimSuffix(path.Base(n), ".json"); r.Name != want {
			return nil, fmt.Errorf("manifests: %s: %w: name %q does not match the file name", n, ErrRecipe, r.Name)
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// LookupSuite returns the embedded recipe with the given name.
func LookupSuite(name string) (*Recipe, error) {
	all, err := Suites()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, r := range all {
		if r.Name == name {
			return r, nil
		}
		names = append(names, r.Name)
	}
	return nil, fmt.Errorf("manifests: %w %q (embedded suites: %s)", ErrUnknownSuite, name, strings.Join(names, ", "))
}
