package manifests

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/goldset/goldset/internal/dtype"
	"github.com/goldset/goldset/internal/safefile"
	"github.com/goldset/goldset/npy"
)

// SchemaVersion is the manifest schema this package writes and reads.
const SchemaVersion = 1

// MaxManifestBytes caps the size of a manifest read from disk.
const MaxManifestBytes = 64 << 20

// Sentinel errors.
var (
	ErrSchema   = errors.New("unsupported manifest schema version")
	ErrInvalid  = errors.New("invalid manifest")
	ErrPath     = errors.New("tensor path is not local to the bundle")
	ErrMismatch = errors.New("bundle does not match its manifest")
)

// Roles of a tensor in a case.
const (
	RoleInput  = "input"
	RoleGolden = "golden"
	RoleTruth  = "truth"
	RoleAux    = "aux"
)

// Manifest describes a bundle. See the package documentation.
type Manifest struct {
	SchemaVersion int    `json:"schema_version"`
	Suite         string `json:"suite"`
	SuiteVersion  string `json:"suite_version"`
	SpecVersion   int    `json:"spec_version"`
	Generator     string `json:"generator"`
	Seed          uint64 `json:"seed"`
	// HiddenCommitment is the sha256 (hex) of the secret from which hidden
	// cases' seeds are derived; present only when hidden cases exist.
	HiddenCommitment string `json:"hidden_commitment,omitempty"`
	// Shard is "i/n" when the bundle holds one shard of a suite.
	Shard string `json:"shard,omitempty"`
	Cases []Case `json:"cases"`
	// Chains lists the bundle's pipeline cases (chain.go); their stage
	// cases point back through Case.Chain.
	Chains []Chain `json:"chains,omitempty"`
	// Digest is the sha256 of the canonical manifest (see package doc).
	Digest     string      `json:"digest"`
	Provenance *Provenance `json:"provenance,omitempty"`
}

// Provenance records facts about the run that are kept out of the digest.
type Provenance struct {
	Tool      string `json:"tool"`
	Version   string `json:"version"`
	GoVersion string `json:"go_version,omitempty"`
	GOARCH    string `json:"goarch,omitempty"`
	Created   string `json:"created,omitempty"`
	Host      string `json:"host,omitempty"`
	Command   string `json:"command,omitempty"`
}

// Case is one op instance with its tensors.
type Case struct {
	ID    string `json:"id"`
	Op    string `json:"op"`
	Split string `json:"split"`
	// Params are the op's parameters as recorded (canonical JSON object).
	Params json.RawMessage `json:"params"`
	// Info holds derived facts (selection margins, statistics).
	Info    json.RawMessage `json:"info,omitempty"`
	Tensors []Tensor        `json:"tensors"`
	// Work is the least traffic and arithmetic a correct kernel does for
	// the case, counted from its data (docs/spec.md §13); nil in bundles
	// written before it was recorded.
	Work *Work `json:"work,omitempty"`
	// Chain places a stage case in its chain (Manifest.Chains); nil for a
	// case judged alone.
	Chain *ChainRef `json:"chain,omitempty"`
}

// Work is a case's exact work (docs/spec.md §13): the bytes a correct
// kernel must read and write at least once (pages referenced, valid
// tokens, selected entries, routed experts; not the padding), and its
// floating-point operations (a multiply-add is 2), whose operand dtype
// FlopDType picks a device's peak rate.
type Work struct {
	BytesRead    int64  `json:"bytes_read"`
	BytesWritten int64  `json:"bytes_written"`
	Flops        int64  `json:"flops"`
	FlopDType    string `json:"flop_dtype"`
}

// Tensor is one .npy file of a case.
type Tensor struct {
	Name  string  `json:"name"`
	Role  string  `json:"role"`
	Path  string  `json:"path"`
	DType string  `json:"dtype"`
	Shape []int64 `json:"shape"`
	// SHA256 and Bytes describe the uncompressed .npy bytes.
	SHA256      string `json:"sha256"`
	Bytes       int64  `json:"bytes"`
	Compression string `json:"compression,omitempty"`
	// Tolerance is the compare rule for outputs (package compare's Tolerance).
	Tolerance json.RawMessage `json:"tolerance,omitempty"`
}

// NpyDType maps a logical dtype name (a row of the dtype table,
// internal/dtype) to the .npy descriptor that stores it.
func NpyDType(logical string) (npy.DType, bool) {
	d, err := dtype.Parse(logical)
	if err != nil {
		return "", false
	}
	return d.Descr(), true
}

// ComputeDigest returns the digest of m's canonical form.
func ComputeDigest(m *Manifest) (string, error) {
	c := *m
	c.Digest = ""
	c.Provenance = nil
	b, err := json.Marshal(&c)
	if err != nil {
		return "", fmt.Errorf("manifests: canonical form: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Seal sets m.Digest from its canonical form.
func (m *Manifest) Seal() error {
	d, err := ComputeDigest(m)
	if err != nil {
		return err
	}
	m.Digest = d
	return nil
}

// Case returns the case with the given id, or nil.
func (m *Manifest) Case(id string) *Case {
	for i := range m.Cases {
		if m.Cases[i].ID == id {
			return &m.Cases[i]
		}
	}
	return nil
}

// Tensor returns the tensor with the given name, or nil.
func (c *Case) Tensor(name string) *Tensor {
	for i := range c.Tensors {
		if c.Tensors[i].Name == name {
			return &c.Tensors[i]
		}
	}
	return nil
}

// Marshal returns the manifest as indented JSON with a trailing newline.
func (m *Manifest) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ParseManifest decodes and validates a manifest; name is used in errors.
func ParseManifest(name string, data []byte) (*Manifest, error) {
	var probe struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("manifests: parse %q: %w: %v", name, ErrInvalid, err)
	}
	if probe.SchemaVersion == nil {
		return nil, fmt.Errorf("manifests: %q: %w: no schema_version (not a goldset manifest?)", name, ErrInvalid)
	}
	if v := *probe.SchemaVersion; v != SchemaVersion {
		hint := ""
		if v > SchemaVersion {
			hint = "; it was written by a newer goldset, upgrade to read it"
		}
		return nil, fmt.Errorf("manifests: %q: %w %d (this build reads %d%s)", name, ErrSchema, v, SchemaVersion, hint)
	}
	m := new(Manifest)
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(m); err != nil {
		return nil, fmt.Errorf("manifests: parse %q: %w: %v", name, ErrInvalid, err)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("manifests: %q: %w", name, err)
	}
	return m, nil
}

// Validate checks the manifest's internal consistency.
func (m *Manifest) Validate() error {
	if m.Suite == "" {
		return fmt.Errorf("%w: empty suite name", ErrInvalid)
	}
	ids := make(map[string]bool, len(m.Cases))
	paths := make(map[string]*Tensor)
	for ci := range m.Cases {
		c := &m.Cases[ci]
		if err := checkName("case id", c.ID); err != nil {
			return err
		}
		if ids[c.ID] {
			return fmt.Errorf("%w: duplicate case id %q", ErrInvalid, c.ID)
		}
		ids[c.ID] = true
		if c.Op == "" {
			return fmt.Errorf("%w: case %q has no op", ErrInvalid, c.ID)
		}
		if w := c.Work; w != nil && (w.BytesRead < 0 || w.BytesWritten < 0 || w.Flops < 0) {
			return fmt.Errorf("%w: case %q has negative work %+v", ErrInvalid, c.ID, *w)
		}
		names := make(map[string]bool, len(c.Tensors))
		for ti := range c.Tensors {
			t := &c.Tensors[ti]
			where := fmt.Sprintf("case %q tensor %q", c.ID, t.Name)
			if err := checkName("tensor name", t.Name); err != nil {
				return fmt.Errorf("case %q: %w", c.ID, err)
			}
			if names[t.Name] {
				return fmt.Errorf("%w: %s appears twice", ErrInvalid, where)
			}
			names[t.Name] = true
			switch t.Role {
			case RoleInput, RoleGolden, RoleTruth, RoleAux:
			default:
				return fmt.Errorf("%w: %s has unknown role %q", ErrInvalid, where, t.Role)
			}
			if _, ok := NpyDType(t.DType); !ok {
				return fmt.Errorf("%w: %s has unknown dtype %q", ErrInvalid, where, t.DType)
			}
			for _, d := range t.Shape {
				if d < 0 {
					return fmt.Errorf("%w: %s has negative dimension in shape %v", ErrInvalid, where, t.Shape)
				}
			}
			if !filepath.IsLocal(filepath.FromSlash(t.Path)) || strings.Contains(t.Path, `\`) {
				return fmt.Errorf("%w: %s: %q", ErrPath, where, t.Path)
			}
			if first := paths[t.Path]; first != nil {
				// A chain lists an earlier stage's golden again as a later
				// stage's input: the same file, every fact equal.
				if c.Chain == nil || t.Role != RoleInput || !sameFile(first, t) {
					return fmt.Errorf("%w: %s shares path %q with another tensor", ErrInvalid, where, t.Path)
				}
			} else {
				paths[t.Path] = t
			}
			if t.Compression != "" && t.Compression != "zstd" {
				return fmt.Errorf("%w: %s has unknown compression %q", ErrInvalid, where, t.Compression)
			}
			if len(t.SHA256) != 64 {
				return fmt.Errorf("%w: %s has no valid sha256", ErrInvalid, where)
			}
			if t.Bytes < 0 {
				return fmt.Errorf("%w: %s has negative byte count", ErrInvalid, where)
			}
		}
	}
	return m.validateChains()
}

// checkName accepts the names goldset writes: letters, digits, '.', '_', '-',
// not starting with '.'; they become file and directory names.
func checkName(what, s string) error {
	if s == "" || len(s) > 200 || s[0] == '.' {
		return fmt.Errorf("%w: bad %s %q", ErrInvalid, what, s)
	}
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
		if !ok {
			return fmt.Errorf("%w: bad %s %q (letters, digits, '.', '_', '-' only)", ErrInvalid, what, s)
		}
	}
	return nil
}

// ReadManifest reads and validates path, which is a manifest.json or a
// bundle directory holding one.
func ReadManifest(path string) (*Manifest, error) {
	m, _, err := ReadManifestBytes(path)
	return m, err
}

// ReadManifestBytes is ReadManifest that also returns the bytes parsed, for
// a caller that carries the manifest byte for byte (export): one read, so
// what is carried is what was parsed and checked.
func ReadManifestBytes(path string) (*Manifest, []byte, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "manifest.json")
	}
	f, err := safefile.Open(path) // no link, FIFO or device
	if err != nil {
		return nil, nil, fmt.Errorf("manifests: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxManifestBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("manifests: read %q: %w", path, err)
	}
	if len(data) > MaxManifestBytes {
		return nil, nil, fmt.Errorf("manifests: %q: %w: larger than %d bytes", path, ErrInvalid, MaxManifestBytes)
	}
	m, err := ParseManifest(path, data)
	if err != nil {
		return nil, nil, err
	}
	return m, data, nil
}
