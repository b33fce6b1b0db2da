package suite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"

	"github.com/goldset/goldset/manifests"
)

// BundleSink writes tensors into an atomic bundle writer.
type BundleSink struct{ W *manifests.BundleWriter }

// Create implements Sink.
func (s BundleSink) Create(rel string, compress bool) (File, error) {
	return s.W.Create(rel, compress)
}

// HashSink computes hashes without writing anything (for regeneration checks).
type HashSink struct{}

// Create implements Sink.
func (HashSink) Create(rel string, compress bool) (File, error) {
	return &hashFile{h: sha256.New()}, nil
}

type hashFile struct {
	h hash.Hash
	n int64
}

func (f *hashFile) Write(p []byte) (int, error) {
	f.h.Write(p)
	f.n += int64(len(p))
	return len(p), nil
}
func (f *hashFile) Close() error   { return nil }
func (f *hashFile) SHA256() string { return hex.EncodeToString(f.h.Sum(nil)) }
func (f *hashFile) Bytes() int64   { return f.n }

// RecipeFromManifest reconstructs the recipe of the cases a manifest holds:
// everything needed to rebuild them (suite name, version, seed, per case
// op, split and the recorded parameters).
func RecipeFromManifest(m *manifests.Manifest) (*manifests.Recipe, error) {
	if m.Generator != GeneratorVersion {
		return nil, fmt.Errorf("suite: manifest was made by generator %q; this build has %q and cannot reproduce it", m.Generator, GeneratorVersion)
	}
	if r, n, ok := variantsBase(m); ok {
		// Its cases are not recipe cases: rebuilt as such they would get
		// full goldens and no sampled rows.
		return nil, fmt.Errorf("suite: %w: the manifest holds %d replay-proof variants of %s %s, not recipe cases (check it with verify --regenerate; build it with gen %s --case %s --variants %d)",
			ErrVariants, n, r.Name, r.Cases[0].ID, r.Name, r.Cases[0].ID, n)
	}
	r := &manifests.Recipe{Name: m.Suite, Version: m.SuiteVersion, SpecVersion: m.SpecVersion, Seed: m.Seed}
	for _, c := range m.Cases {
		if c.Chain != nil {
			// A chain's stage cases come from one pipeline recipe case,
			// recorded in the manifest's chain list.
			ch := m.ChainOf(c.Chain.ID)
			if ch == nil || len(ch.Steps) == 0 {
				return nil, fmt.Errorf("suite: case %s names chain %q, which the manifest does not list", c.ID, c.Chain.ID)
			}
			if c.Chain.Step != ch.Steps[0] || c.Chain.Stage != 0 {
				continue
			}
			r.Cases = append(r.Cases, manifests.RecipeCase{ID: ch.ID, Op: PipelineOp, Split: ch.Split, Params: ch.Params})
			continue
		}
		r.Cases = append(r.Cases, manifests.RecipeCase{ID: c.ID, Op: c.Op, Split: c.Split, Params: c.Params})
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r, nil
}

// CompareManifests lists the tensors whose hash, size, shape or dtype
// differ between want (a reference manifest) and got (a rebuild), cases or
// tensors present in only one of them, and chains rebuilt with other
// stages or steps.
func CompareManifests(want, got *manifests.Manifest) []manifests.Problem {
	var probs []manifests.Problem
	for _, wc := range want.Chains {
		gc := got.ChainOf(wc.ID)
		switch {
		case gc == nil:
			probs = append(probs, manifests.Problem{Case: wc.ID, What: "chain not rebuilt"})
		case gc.Kind != wc.Kind || fmt.Sprint(gc.Stages, gc.Steps) != fmt.Sprint(wc.Stages, wc.Steps):
			probs = append(probs, manifests.Problem{Case: wc.ID, What: fmt.Sprintf("chain rebuilt as %s %v steps %v, manifest says %s %v steps %v",
				gc.Kind, gc.Stages, gc.Steps, wc.Kind, wc.Stages, wc.Steps)})
		}
	}
	for i := range want.Cases {
		wc := &want.Cases[i]
		gc := got.Case(wc.ID)
		if gc == nil {
			probs = append(probs, manifests.Problem{Case: wc.ID, What: "case not rebuilt"})
			continue
		}
		if !sameJSON(gc.Info, wc.Info) {
			probs = append(probs, manifests.Problem{Case: wc.ID, What: fmt.Sprintf("info differs: %s, rebuilt %s", wc.Info, gc.Info)})
		}
		for j := range wc.Tensors {
			wt := &wc.Tensors[j]
			gt := gc.Tensor(wt.Name)
			p := manifests.Problem{Case: wc.ID, Tensor: wt.Name, Path: wt.Path}
			switch {
			case gt == nil:
				p.What = "tensor not rebuilt"
			case gt.DType != wt.DType || fmt.Sprint(gt.Shape) != fmt.Sprint(wt.Shape):
				p.What = fmt.Sprintf("rebuilt as %s%v, manifest says %s%v", gt.DType, gt.Shape, wt.DType, wt.Shape)
			case gt.SHA256 != wt.SHA256:
				p.What = fmt.Sprintf("rebuilt sha256 %s, manifest says %s", gt.SHA256, wt.SHA256)
			default:
				continue
			}
			probs = append(probs, p)
		}
		for j := range gc.Tensors {
			if wc.Tensor(gc.Tensors[j].Name) == nil {
				probs = append(probs, manifests.Problem{Case: wc.ID, Tensor: gc.Tensors[j].Name, What: "rebuilt tensor not in the manifest"})
			}
		}
	}
	return probs
}

// Regenerate rebuilds every case of m in memory (hashing only) and returns
// what differs from m.
func Regenerate(ctx context.Context, m *manifests.Manifest, o Options) ([]manifests.Problem, error) {
	if r, n, ok := variantsBase(m); ok && m.Generator == GeneratorVersion {
		return regenerateVariants(ctx, m, r, n, o)
	}
	r, err := RecipeFromManifest(m)
	if err != nil {
		return nil, err
	}
	if err := checkSecret(m, o.Secret); err != nil {
		return nil, err
	}
	o.Splits = []string{manifests.SplitPublic, manifests.SplitBenchmark, manifests.SplitEdge}
	o.Shard = Shard{}
	o.Cases = nil
	if m.HiddenCommitment != "" {
		o.Splits = append(o.Splits, manifests.SplitHidden)
	}
	got, err := Build(ctx, r, HashSink{}, o)
	if err != nil {
		return nil, err
	}
	return CompareManifests(m, got), nil
}

// checkSecret verifies a secret against the manifest's commitment.
func checkSecret(m *manifests.Manifest, secret []byte) error {
	if m.HiddenCommitment == "" {
		return nil
	}
	if len(secret) == 0 {
		return fmt.Errorf("suite: %w: the manifest holds hidden cases", ErrSecret)
	}
	sum := sha256.Sum256(secret)
	if hex.EncodeToString(sum[:]) != m.HiddenCommitment {
		return fmt.Errorf("suite: %w: the given secret does not match the manifest's commitment %s", ErrSecret, m.HiddenCommitment)
	}
	return nil
}

// sameJSON compares two JSON texts ignoring insignificant white space (a
// manifest read from disk is indented, a rebuilt one compact).
func sameJSON(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}
