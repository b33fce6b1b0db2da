package manifests_test

import (
	"fmt"

	"github.com/goldset/goldset/manifests"
)

func ExampleLookupSuite() {
	r, err := manifests.LookupSuite("stage2-paged")
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Name, r.SpecVersion, r.Cases[0].Op)
	// Output: stage2-paged 1 reshape_and_cache
}

func ExampleComputeDigest() {
	m := &manifests.Manifest{SchemaVersion: 1, Suite: "demo", Seed: 1}
	d1, _ := manifests.ComputeDigest(m)
	m.Provenance = &manifests.Provenance{Host: "another machine"}
	d2, _ := manifests.ComputeDigest(m)
	fmt.Println(d1 == d2)
	// Output: true
}
