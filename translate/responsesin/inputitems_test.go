package responsesin

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/translate"
)

func TestParseListQuery(t *testing.T) {
	tests := []struct {
		name                string
		limit, order, after string
		want                ListQuery
		wantParam           string
	}{
		{name: "defaults", want: ListQuery{Limit: 20}},
		{name: "asc, limit and after", limit: "5", order: "asc", after: "msg_1", want: ListQuery{Limit: 5, Asc: true, After: "msg_1"}},
		{name: "desc", order: "desc", want: ListQuery{Limit: 20}},
		{name: "limit 0", limit: "0", wantParam: "limit"},
		{name: "limit 101", limit: "101", wantParam: "limit"},
		{name: "limit not a number", limit: "ten", wantParam: "limit"},
		{name: "order unknown", order: "newest", wantParam: "order"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseListQuery(tt.limit, tt.order, tt.after)
			if tt.wantParam != "" {
				var pe *translate.ParamError
				if !errors.As(err, &pe) || pe.Param != tt.wantParam {
					t.Fatalf("err = %v, want a ParamError for %s", err, tt.wantParam)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestAppendInputItems: the stored input items as OpenAI lists them, every item with an
// id (its own, or one made of the response id and its position), messages with their
// content as parts, paged by limit, order and after.
func TestAppendInputItems(t *testing.T) {
	const input = `[{"role":"user","content":"hi"},
		{"type":"message","role":"assistant","id":"msg_own","content":"hello"},
		{"type":"function_call","call_id":"call_1","name":"f","arguments":"{}"},
		{"type":"function_call_output","call_id":"call_1","output":"ok","id":null},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"more"}]}]`
	items := map[string]string{
		"msg_x_in0": `{"id":"msg_x_in0","type":"message","role":"user","content":[{"type":"input_text","text":"hi"}],"status":"completed"}`,
		"msg_own":   `{"id":"msg_own","type":"message","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"hello"}],"status":"completed"}`,
		"fc_x_in2":  `{"id":"fc_x_in2","type":"function_call","call_id":"call_1","name":"f","arguments":"{}"}`,
		"fco_x_in3": `{"id":"fco_x_in3","type":"function_call_output","call_id":"call_1","output":"ok"}`,
		"msg_x_in4": `{"id":"msg_x_in4","type":"message","role":"user","content":[{"type":"input_text","text":"more"}],"status":"completed"}`,
	}
	type list struct {
		Data    []json.RawMessage `json:"data"`
		FirstID *string           `json:"first_id"`
		LastID  *string           `json:"last_id"`
		HasMore bool              `json:"has_more"`
		Object  string            `json:"object"`
	}
	tests := []struct {
		name      string
		q         ListQuery
		wantIDs   []string
		wantMore  bool
		wantParam string
	}{
		{name: "desc by default", q: ListQuery{Limit: 20}, wantIDs: []string{"msg_x_in4", "fco_x_in3", "fc_x_in2", "msg_own", "msg_x_in0"}},
		{name: "asc", q: ListQuery{Limit: 20, Asc: true}, wantIDs: []string{"msg_x_in0", "msg_own", "fc_x_in2", "fco_x_in3", "msg_x_in4"}},
		{name: "first page", q: ListQuery{Limit: 2, Asc: true}, wantIDs: []string{"msg_x_in0", "msg_own"}, wantMore: true},
		{name: "page after an id", q: ListQuery{Limit: 2, Asc: true, After: "msg_own"}, wantIDs: []string{"fc_x_in2", "fco_x_in3"}, wantMore: true},
		{name: "last page", q: ListQuery{Limit: 2, After: "fc_x_in2"}, wantIDs: []string{"msg_own", "msg_x_in0"}},
		{name: "after the last item", q: ListQuery{Limit: 2, After: "msg_x_in0"}, wantIDs: []string{}},
		{name: "after an unknown id", q: ListQuery{Limit: 2, After: "msg_nope"}, wantParam: "after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := AppendInputItems(nil, "resp_x", []byte(input), tt.q)
			if tt.wantParam != "" {
				var pe *translate.ParamError
				if !errors.As(err, &pe) || pe.Param != tt.wantParam {
					t.Fatalf("err = %v, want a ParamError for %s", err, tt.wantParam)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got list
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, b)
			}
			if got.Object != "list" || got.HasMore != tt.wantMore {
				t.Errorf("object %q has_more %v, want list, %v", got.Object, got.HasMore, tt.wantMore)
			}
			ids := []string{}
			for _, d := range got.Data {
				var it struct{ ID string }
				json.Unmarshal(d, &it)
				ids = append(ids, it.ID)
				if want := items[it.ID]; string(d) != want {
					t.Errorf("item %s:\n got %s\nwant %s", it.ID, d, want)
				}
			}
			if diff := cmp.Diff(tt.wantIDs, ids); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
			switch {
			case len(ids) == 0 && (got.FirstID != nil || got.LastID != nil):
				t.Errorf("empty page: first_id %v last_id %v, want null", got.FirstID, got.LastID)
			case len(ids) > 0 && (got.FirstID == nil || *got.FirstID != ids[0] || got.LastID == nil || *got.LastID != ids[len(ids)-1]):
				t.Errorf("first_id %v last_id %v, want %s and %s", got.FirstID, got.LastID, ids[0], ids[len(ids)-1])
			}
		})
	}
}

// FuzzAppendInputItems: whatever the stored input holds, the list is JSON and nothing
// panics.
func FuzzAppendInputItems(f *testing.F) {
	f.Add(`[{"role":"user","content":"hi"},{"type":"function_call","id":null,"call_id":"c"}]`, "", 2, true)
	f.Add(`[{"type":"reasoning","summary":[]},5,"x",null]`, "rs_x_in0", 1, false)
	f.Fuzz(func(t *testing.T, input, after string, limit int, asc bool) {
		b, err := AppendInputItems(nil, "resp_x", []byte(input), ListQuery{After: after, Limit: limit % 200, Asc: asc})
		if err == nil && !json.Valid(b) {
			t.Fatalf("not JSON: %s", b)
		}
	})
}
