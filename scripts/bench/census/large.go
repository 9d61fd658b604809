package main

import (
	"encoding/json"
	"fmt"
)

// The bench's scenario d request (../shared/bench's largeBody): a system prompt, then
// turns of a user question, an assistant message with two parallel tool calls (run_sql and
// get_weather), their two results and the assistant's answer, until the body is within
// 200 bytes of kb KB, then a closing user message; three tools, tool_choice auto,
// max_tokens 2048, temperature 0.2. The types and the members' order are the bench's, so
// encoding/json writes the same bytes; large_test.go holds it to the bodies recorded from
// the bench (translate/openaichat/testdata/history-10k.json and history-100k.json).

type histMessage struct {
	Role       string         `json:"role"`
	Content    any            `json:"content"`
	ToolCalls  []histToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type histToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// histCities are the cities the turns ask about, in turn.
var histCities = [...]string{"Paris", "Amsterdam", "Copenhagen", "Berlin", "Utrecht", "Vienna", "Lyon", "Ghent", "Munich", "Basel"}

const (
	histSystem = "You are an operations assistant for a bicycle rental company. " +
		"Use the tools when you need live data. Always cite the tool results you rely on, keep answers short, " +
		"and never invent numbers. If a tool fails, say so and suggest what to try next."
	histRows = `[{"day":"2025-06-02","rentals":412},{"day":"2025-06-03","rentals":388},` +
		`{"day":"2025-06-04","rentals":455},{"day":"2025-06-05","rentals":501},{"day":"2025-06-06","rentals":610},` +
		`{"day":"2025-06-07","rentals":702},{"day":"2025-06-08","rentals":655}]`
	histLast = "Summarise all of the above in three bullet points for the weekly report."
)

// largeBody returns the bench's scenario d body for model, of about kb KB.
func largeBody(model string, stream bool, kb int) []byte {
	param := func(typ, desc string) map[string]any { return map[string]any{"type": typ, "description": desc} }
	tool := func(name, desc string, props map[string]any, required string) map[string]any {
		return map[string]any{"type": "function", "function": map[string]any{"name": name, "description": desc,
			"parameters": map[string]any{"type": "object", "properties": props, "required": []string{required}}}}
	}
	tools := []map[string]any{
		tool("get_weather", "Get the current weather and a three day forecast for a city.",
			map[string]any{"city": param("string", "City name, e.g. Paris"), "unit": param("string", "celsius or fahrenheit")}, "city"),
		tool("search_docs", "Full-text search over the internal engineering documentation.",
			map[string]any{"query": param("string", "Search query"), "limit": param("integer", "Maximum number of hits")}, "query"),
		tool("run_sql", "Run a read-only SQL query against the analytics warehouse and return rows as JSON.",
			map[string]any{"sql": param("string", "A single SELECT statement"), "timeout_s": param("integer", "Timeout in seconds")}, "sql"),
	}
	msgs := []histMessage{{Role: "system", Content: histSystem}}
	for turn := 0; len(encodeBody(map[string]any{"model": model, "messages": msgs, "tools": tools}, stream)) < kb*1024-200; turn++ {
		city := histCities[turn%len(histCities)]
		var sql, weather histToolCall
		sql.ID, sql.Type, sql.Function.Name = fmt.Sprintf("call_%02dA7Hc9WbQm2", turn), "function", "run_sql"
		sql.Function.Arguments = fmt.Sprintf(`{"sql":"SELECT day, count(*) AS rentals FROM rentals WHERE city = '%s' AND day >= current_date - 7 GROUP BY day ORDER BY day","timeout_s":10}`, city)
		weather.ID, weather.Type, weather.Function.Name = fmt.Sprintf("call_%02dKx3PzR8Lt5", turn), "function", "get_weather"
		weather.Function.Arguments = fmt.Sprintf(`{"city":"%s","unit":"celsius"}`, city)
		msgs = append(msgs,
			histMessage{Role: "user", Content: fmt.Sprintf(
				"How many bikes were rented in %s last week, and will the weather be good enough for the weekend promotion?", city)},
			histMessage{Role: "assistant", ToolCalls: []histToolCall{sql, weather}},
			histMessage{Role: "tool", ToolCallID: sql.ID, Content: histRows},
			histMessage{Role: "tool", ToolCallID: weather.ID, Content: fmt.Sprintf(`{"city":"%s","now":{"temp_c":21,"wind_kph":12,"sky":"partly cloudy"},`+
				`"forecast":[{"day":"Fri","high_c":23,"rain_mm":0},{"day":"Sat","high_c":25,"rain_mm":0},{"day":"Sun","high_c":19,"rain_mm":4}]}`, city)},
			histMessage{Role: "assistant", Content: fmt.Sprintf("Rentals in %s last week totalled 3,723, peaking at 702 on Saturday. "+
				"The forecast is dry and warm on Friday and Saturday (23 and 25 C), with some rain on Sunday, "+
				"so the promotion should run Friday to Saturday.", city)},
		)
	}
	msgs = append(msgs, histMessage{Role: "user", Content: histLast})
	return encodeBody(map[string]any{"model": model, "messages": msgs, "tools": tools, "tool_choice": "auto",
		"max_tokens": 2048, "temperature": 0.2}, stream)
}

// encodeBody adds the stream members when stream is set (the bench's finishBody) and
// encodes req with encoding/json, which sorts a map's members.
func encodeBody(req map[string]any, stream bool) []byte {
	if stream {
		req["stream"] = true
		req["stream_options"] = map[string]any{"include_usage": true}
	}
	b, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	return b
}
