package proxy

import "testing"

// TestFoundationModel: CountTokens is asked with the foundation model of a cross-region
// inference profile; foundation model ids and ARNs go as they are.
func TestFoundationModel(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	for in, want := range map[string]string{
		"us.anthropic.claude-sonnet-4-20250514-v1:0":                                                         "anthropic.claude-sonnet-4-20250514-v1:0",
		"global.anthropic.claude-sonnet-4-5-20250929-v1:0":                                                   "anthropic.claude-sonnet-4-5-20250929-v1:0",
		"apac.anthropic.claude-3-haiku-20240307-v1:0":                                                        "anthropic.claude-3-haiku-20240307-v1:0",
		"anthropic.claude-3-haiku-20240307-v1:0":                                                             "anthropic.claude-3-haiku-20240307-v1:0",
		"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-haiku-20240307-v1:0": "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-haiku-20240307-v1:0",
		"eu.amazon.nova-lite-v1:0":                                                                           "eu.amazon.nova-lite-v1:0",
	} {
		if got := foundationModel(in); got != want {
			t.Errorf("foundationModel(%q) = %q, want %q", in, got, want)
		}
	}
}
