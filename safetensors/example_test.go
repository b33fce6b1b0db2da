package safetensors_test

import (
	"bytes"
	"fmt"

	"github.com/goldset/goldset/safetensors"
)

func ExampleEncode() {
	var b bytes.Buffer
	safetensors.Encode(&b, map[string]string{"format": "pt"}, []safetensors.Tensor{
		{Name: "y", DType: "BF16", Shape: []int64{2}, Data: []byte{0x80, 0x3f, 0x00, 0x40}}, // 1, 2
	})
	h, _ := safetensors.ReadHeader(bytes.NewReader(b.Bytes()), int64(b.Len()))
	fmt.Printf("%q\n", b.Bytes()[8:h.DataStart])
	fmt.Println(h.DataStart%8, h.Tensors[0].Begin, h.Tensors[0].End)
	// Output:
	// "{\"__metadata__\":{\"format\":\"pt\"},\"y\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]}}  "
	// 0 0 4
}
