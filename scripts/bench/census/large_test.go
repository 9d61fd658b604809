package main

import (
	"bytes"
	"os"
	"testing"
)

// TestLargeBodyIsTheBenchs holds largeBody to the scenario d bodies recorded from the
// shared bench (model "gpt", not streaming; translate/openaichat/testdata/SOURCES.md).
func TestLargeBodyIsTheBenchs(t *testing.T) {
	for _, c := range []struct {
		kb   int
		file string
	}{{10, "history-10k.json"}, {100, "history-100k.json"}} {
		want, err := os.ReadFile("../../../translate/openaichat/testdata/" + c.file)
		if err != nil {
			t.Fatal(err)
		}
		got := largeBody("gpt", false, c.kb)
		if !bytes.Equal(got, bytes.TrimRight(want, "\n")) {
			n := 0
			for n < len(got) && n < len(want) && got[n] == want[n] {
				n++
			}
			t.Errorf("%d KB: %d bytes, the bench's %d; first difference at byte %d", c.kb, len(got), len(want), n)
		}
	}
	if s := largeBody("m", true, 10); !bytes.Contains(s, []byte(`"stream":true,"stream_options":{"include_usage":true}`)) {
		t.Errorf("a stream body lacks the stream members: %.200s", s)
	}
}
