package spectest

import (
	"os"
	"path/filepath"
	"strings"
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

// TestRecordedConverseRequestsValidate: the Converse and ConverseStream request bodies
// boto3 sent and Bedrock accepted (testdata/fixtures/bedrock-converse, recorded by
// pydantic-ai) satisfy the check against AWS's published bedrock-runtime model, and a
// body the model forbids is refused naming the offending member.
func TestRecordedConverseRequestsValidate(t *testing.T) {
	check := BedrockConverseRequest(t)
	recordedValidate(t, "bedrock-converse", check)
	for _, tt := range []struct{ body, names string }{
		{`{"messages":[{"role":"user","content":[{"text":"a"}]}],"inferenceConfig":{"max_tokens":1}}`, `"max_tokens"`},
		{`{"messages":[{"role":"user","content":[{"text":"a","cachePoint":{"type":"default"}}]}]}`, "messages[0].content[0]"},
		{`{"messages":[{"role":"user","content":[{"cachePoint":{"type":"forever"}}]}]}`, `"forever"`},
		{`{"modelId":"m","messages":[]}`, `"modelId"`},
	} {
		refusedNaming(t, check, tt.body, tt.names)
	}
}

// TestRecordedVertexRequestsValidate: the generateContent bodies google-genai sent to
// Vertex AI and Vertex accepted (testdata/fixtures/gemini-vertex, recorded by pydantic-ai;
// snake_case and camelCase mixed, as that SDK writes them) satisfy the check against the
// aiplatform v1 discovery document, and bodies it forbids are refused naming the field.
func TestRecordedVertexRequestsValidate(t *testing.T) {
	check := VertexGenerateContentRequest(t)
	recordedValidate(t, "gemini-vertex", check)
	for _, tt := range []struct{ body, names string }{
		{`{"contents":[{"role":"user","parts":[{"text":"a"}]}],"generationConfig":{"max_tokens":1}}`, `"max_tokens"`},
		{`{"contents":[{"role":"user","parts":[{"text":"a"}]}],"generationConfig":{"thinkingConfig":{"thinkingLevel":"extreme"}}}`, `"extreme"`},
		{`{"contents":[{"role":"user","parts":[{"text":1}]}]}`, "contents[0].parts[0].text"},
	} {
		refusedNaming(t, check, tt.body, tt.names)
	}
}

// recordedValidate fails t unless every testdata/fixtures/<dir>/*.request.json (bodies a
// real API accepted) passes check; there must be at least five.
func recordedValidate(t *testing.T, dir string, check func([]byte) error) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(SpecsDir(), "..", "fixtures", dir, "*.request.json"))
	if len(files) < 5 {
		t.Fatalf("only %d recorded requests in testdata/fixtures/%s", len(files), dir)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := check(b); err != nil {
			t.Errorf("recorded request %s does not validate: %v", filepath.Base(f), err)
		}
	}
}

// refusedNaming fails t unless check refuses body with an error containing names.
func refusedNaming(t *testing.T, check func([]byte) error, body, names string) {
	t.Helper()
	if err := check([]byte(body)); err == nil || !strings.Contains(err.Error(), names) {
		t.Errorf("%s: error %v, want one naming %s", body, err, names)
	}
}
