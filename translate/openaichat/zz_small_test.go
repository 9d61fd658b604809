package openaichat

import "testing"

func BenchmarkZZSmall(b *testing.B) {
	body := `{"max_tokens":1024,"messages":[{"role":"system","content":"You are a helpful assistant. Answer concisely and accurately."},{"role":"user","content":"Write a short paragraph about the history of the bicycle."}],"model":"claude-bench","temperature":0.7}`
	var sc Scratch
	var st Stage
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseRequestLazyString(body, &sc, &st); err != nil {
			b.Fatal(err)
		}
	}
}
