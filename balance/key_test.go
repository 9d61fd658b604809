package balance

import "github.com/agate-gateway/agate/translate"

// chatReq returns a request with a system prompt and alternating user and assistant
// messages.
func chatReq(system string, turns ...string) *translate.Request {
	req := &translate.Request{Messages: []translate.Message{{Role: translate.RoleSystem, Content: []translate.Part{{Type: translate.PartText, Text: system}}}}}
	for i, t := range turns {
		role := translate.RoleUser
		if i%2 == 1 {
			role = translate.RoleAssistant
		}
		req.Messages = append(req.Messages, translate.Message{Role: role, Content: []translate.Part{{Type: translate.PartText, Text: t}}})
	}
	req.Tools = []translate.Tool{{Name: "get_weather", Description: "Weather of a city", Parameters: `{"type":"object"}`}}
	return req
}
