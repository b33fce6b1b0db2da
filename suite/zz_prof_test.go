package suite

import (
	"context"
	"testing"

	"github.com/goldset/goldset/manifests"
)

func TestZZProfMoE(t *testing.T) {
	r, _ := manifests.LookupSuite("stage6-mxfp4")
	if _, err := Build(context.Background(), r, HashSink{}, Options{Jobs: 2, Cases: []string{"moe-gptoss-skew-t32"}}); err != nil {
		t.Fatal(err)
	}
}
