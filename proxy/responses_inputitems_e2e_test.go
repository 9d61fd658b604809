package proxy_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
)

// TestResponses_InputItems: GET /v1/responses/{id}/input_items through openai-go's
// Responses.InputItems: the items a stored response was generated from (on a translated
// backend, those of its previous_response_id chain too), newest first by default, paged by
// limit/after/order, every item with an id; visible to the key that stored it only.
func TestResponses_InputItems(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	for _, tt := range []struct {
		kind string
		// want are the texts of the second response's input items, oldest first.
		want []string
	}{
		{"mock", []string{"remember the word kiwi", "remember the word kiwi", "which word?"}},
		{"anthropic", []string{"remember the word kiwi", "noted", "which word?"}},
		// The upstream holds the chain: the gateway has this request's input only.
		{"responses", []string{"which word?"}},
	} {
		t.Run(tt.kind, func(t *testing.T) {
			g := startResponsesGateway(t, tt.kind, "")
			alice, bob := g.client("alice-key"), g.client("bob-key")
			ctx := context.Background()
			_, second := kiwiConversation(t, g, alice)
			texts := func(items []responses.ResponseItemUnion) []string {
				out := []string{}
				for _, it := range items {
					if it.ID == "" {
						t.Errorf("input item without id: %s", it.RawJSON())
					}
					out = append(out, gjson.Get(it.RawJSON(), "content.0.text").Str)
				}
				return out
			}
			page, err := alice.Responses.InputItems.List(ctx, second.ID, responses.InputItemListParams{})
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			desc := make([]string, len(tt.want))
			for i, s := range tt.want {
				desc[len(tt.want)-1-i] = s
			}
			if diff := cmp.Diff(desc, texts(page.Data)); diff != "" || page.HasMore {
				t.Errorf("default list (desc), has_more %v (-want +got):\n%s", page.HasMore, diff)
			}
			// One item a page, oldest first, following the SDK's cursor (after = last id).
			pager := alice.Responses.InputItems.ListAutoPaging(ctx, second.ID, responses.InputItemListParams{
				Limit: openai.Int(1), Order: responses.InputItemListParamsOrderAsc})
			var all []responses.ResponseItemUnion
			for pager.Next() {
				all = append(all, pager.Current())
			}
			if err := pager.Err(); err != nil {
				t.Fatalf("paging: %v", err)
			}
			if diff := cmp.Diff(tt.want, texts(all)); diff != "" {
				t.Errorf("paged asc (-want +got):\n%s", diff)
			}
			_, err = bob.Responses.InputItems.List(ctx, second.ID, responses.InputItemListParams{})
			if e := respSDKError(t, err); e.StatusCode != 404 {
				t.Errorf("bob listing alice's items: status %d", e.StatusCode)
			}
			_, err = alice.Responses.InputItems.List(ctx, second.ID, responses.InputItemListParams{After: openai.String("msg_nope")})
			if e := respSDKError(t, err); e.StatusCode != 400 || e.Param != "after" {
				t.Errorf("unknown after: status %d param %q", e.StatusCode, e.Param)
			}
			_, err = alice.Responses.InputItems.List(ctx, second.ID, responses.InputItemListParams{Limit: openai.Int(101)})
			if e := respSDKError(t, err); e.StatusCode != 400 || e.Param != "limit" {
				t.Errorf("limit 101: status %d param %q", e.StatusCode, e.Param)
			}
			_, err = alice.Responses.InputItems.List(ctx, "resp_unknown", responses.InputItemListParams{})
			if e := respSDKError(t, err); e.StatusCode != 404 {
				t.Errorf("unknown response: status %d", e.StatusCode)
			}
		})
	}
}
