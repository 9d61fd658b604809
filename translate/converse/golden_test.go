package converse

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/goldentest"
	"github.com/agate-gateway/agate/translate/internal/spectest"
)

// TestGolden runs every transcript in testdata (goldentest.Dialect says what each section
// means; testdata/README.md where each recording comes from): adding a recording is
// adding a file.
func TestGolden(t *testing.T) {
	goldentest.Run(t, goldentest.Dialect{
		Provider: New(), NewDecoder: func() translate.StreamDecoder { return &stream{} },
		Schema: func(t testing.TB) func([]byte) error {
			published := spectest.BedrockConverseRequest(t)
			return func(body []byte) error {
				if err := checkRequest(body); err != nil {
					return err
				}
				return published(body) // AWS's bedrock-runtime model (testdata/specs/bedrock)
			}
		},
	})
}

// checkRequest holds a Converse request body to the shape of the API reference's
// ConverseRequest: the members it names; messages alternating user and assistant, from
// user; each content block, system block and tool exactly one member of its union
// (ContentBlock, SystemContentBlock, Tool).
func checkRequest(body []byte) error {
	var req struct {
		Messages []struct {
			Role    string                       `json:"role"`
			Content []map[string]json.RawMessage `json:"content"`
		} `json:"messages"`
		System          []map[string]json.RawMessage `json:"system"`
		InferenceConfig *struct {
			MaxTokens     *int     `json:"maxTokens"`
			Temperature   *float64 `json:"temperature"`
			TopP          *float64 `json:"topP"`
			StopSequences []string `json:"stopSequences"`
		} `json:"inferenceConfig"`
		ToolConfig *struct {
			Tools      []map[string]json.RawMessage `json:"tools"`
			ToolChoice map[string]json.RawMessage   `json:"toolChoice"`
		} `json:"toolConfig"`
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return err
	}
	for k := range top {
		switch k {
		case "messages", "system", "inferenceConfig", "toolConfig", "guardrailConfig", "additionalModelRequestFields",
			"promptVariables", "additionalModelResponseFieldPaths", "requestMetadata", "performanceConfig":
		default:
			return fmt.Errorf("ConverseRequest has no member %q", k)
		}
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return err
	}
	one := func(what string, u map[string]json.RawMessage, allowed ...string) error {
		if len(u) != 1 {
			return fmt.Errorf("%s has %d members, a union takes one", what, len(u))
		}
		for k := range u {
			for _, a := range allowed {
				if k == a {
					return nil
				}
			}
			return fmt.Errorf("%s member %q is not one of %v", what, k, allowed)
		}
		return nil
	}
	for i, m := range req.Messages {
		want := "user"
		if i%2 == 1 {
			want = "assistant"
		}
		if m.Role != want {
			return fmt.Errorf("messages[%d].role %q, want %q (roles alternate from user)", i, m.Role, want)
		}
		if len(m.Content) == 0 {
			return fmt.Errorf("messages[%d].content is empty", i)
		}
		for j, c := range m.Content {
			if err := one(fmt.Sprintf("messages[%d].content[%d]", i, j), c, "text", "image", "document", "video",
				"toolUse", "toolResult", "guardContent", "cachePoint", "reasoningContent", "citationsContent"); err != nil {
				return err
			}
		}
	}
	for i, s := range req.System {
		if err := one(fmt.Sprintf("system[%d]", i), s, "text", "guardContent", "cachePoint"); err != nil {
			return err
		}
	}
	if tc := req.ToolConfig; tc != nil {
		for i, tool := range tc.Tools {
			if err := one(fmt.Sprintf("toolConfig.tools[%d]", i), tool, "toolSpec", "cachePoint", "systemTool"); err != nil {
				return err
			}
		}
		if tc.ToolChoice != nil {
			if err := one("toolConfig.toolChoice", tc.ToolChoice, "auto", "any", "tool"); err != nil {
				return err
			}
		}
	}
	return nil
}
