package proxy

import "testing"

// TestConverseFoundationModel: CountTokens on a Converse model is asked with the foundation
// model of a cross-region inference profile ("<geography>.<provider>.<model>"); foundation
// model ids ("<provider>.<model>") and ARNs go as they are.
func TestConverseFoundationModel(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	for in, want := range map[string]string{
		"us.amazon.nova-lite-v1:0":                                          "amazon.nova-lite-v1:0",
		"us-gov.meta.llama3-8b-instruct-v1:0":                               "meta.llama3-8b-instruct-v1:0",
		"apac.amazon.nova-pro-v1:0":                                         "amazon.nova-pro-v1:0",
		"amazon.nova-lite-v1:0":                                             "amazon.nova-lite-v1:0",
		"mistral.mistral-7b-instruct-v0:2":                                  "mistral.mistral-7b-instruct-v0:2",
		"meta.llama3-3-70b-instruct-v1:0":                                   "meta.llama3-3-70b-instruct-v1:0",
		"arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-lite-v1:0": "arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-lite-v1:0",
	} {
		if got := converseFoundationModel(in); got != want {
			t.Errorf("converseFoundationModel(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestConverseCountBody: the CountTokens body of a Converse body keeps the members
// ConverseTokensRequest takes, in order, and drops the others (inferenceConfig,
// additionalModelResponseFieldPaths, ...).
func TestConverseCountBody(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	for in, want := range map[string]string{
		`{"messages":[{"role":"user","content":[{"text":"hi"}]}],"system":[{"text":"s"}],"inferenceConfig":{"maxTokens":5},"toolConfig":{"tools":[]},"additionalModelRequestFields":{"k":1}}`: `{"input":{"converse":{"messages":[{"role":"user","content":[{"text":"hi"}]}],"system":[{"text":"s"}],"toolConfig":{"tools":[]},"additionalModelRequestFields":{"k":1}}}}`,
		`{"messages":[],"inferenceConfig":{"maxTokens":5}}`: `{"input":{"converse":{"messages":[]}}}`,
	} {
		if got := string(converseCountBody([]byte(in))); got != want {
			t.Errorf("converseCountBody(%s)\n got %s\nwant %s", in, got, want)
		}
	}
}
