package spectest

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRecordedRequestsValidate(t *testing.T) {
	tests := []struct {
		name, spec, pointer, glob, invalid string
	}{
		{"anthropic", "anthropic/messages.json", "#/components/schemas/CreateMessageParams",
			"anthropic/*/*.request.json", `{"model":"claude","messages":"nope"}`},
		{"responses", "openai/chat-and-responses.json", "#/components/schemas/CreateResponse",
			"responses/*/*.request.json", `{"model":"gpt-4o","input":[{"type":"no_such_item"}],"temperature":"hot"}`},
		{"gemini", "gemini/generate-content.json", "#/components/schemas/GenerateContentRequest",
			"gemini/json/*.request.json", `{"contents":[{"role":"user","parts":"nope"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Schema(t, tt.spec, tt.pointer)
			MustRejectInvalid(t, s, tt.invalid)
			files, _ := filepath.Glob(filepath.Join(SpecsDir(), "..", "fixtures", tt.glob))
			if len(files) == 0 {
				t.Fatalf("no recorded requests match testdata/fixtures/%s", tt.glob)
			}
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if err := Validate(s, b); err != nil {
					t.Errorf("recorded request %s does not validate: %v", filepath.Base(f), err)
				}
			}
		})
	}
}
