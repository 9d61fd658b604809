package responsesin

import (
	"strconv"
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// ListQuery is the query of GET /v1/responses/{id}/input_items.
type ListQuery struct {
	// After is the id of the item the page starts after, in the list's order; "" for the
	// first page.
	After string
	// Limit is the number of items in a page, 1 to 100.
	Limit int
	// Asc lists the items in the order they were given; false lists the last first
	// (OpenAI's default order, desc).
	Asc bool
}

// Bounds of ListQuery.Limit, as OpenAI sets them.
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
)

// ParseListQuery reads the limit, order and after query parameters, each "" when absent.
// Errors are *translate.ParamError values naming the parameter.
func ParseListQuery(limit, order, after string) (ListQuery, error) {
	q := ListQuery{After: after, Limit: DefaultListLimit}
	if limit != "" {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 1 || n > MaxListLimit {
			return q, translate.Errorf("limit", "must be an integer from 1 to %d", MaxListLimit)
		}
		q.Limit = n
	}
	switch order {
	case "", "desc":
	case "asc":
		q.Asc = true
	default:
		return q, translate.Errorf("order", "must be asc or desc")
	}
	return q, nil
}

// AppendInputItems appends the list object GET /v1/responses/{id}/input_items answers
// ({"object":"list","data":[...],"first_id","last_id","has_more"}) for the stored input
// items of response id (a JSON array, responsestore.Record.Input). Items are returned as
// OpenAI lists them: each with an id (items the client sent without one get one made of
// the response id and their position, the same on every call) and messages with type
// "message" and their content as a list of parts. An After that names no item is a
// *translate.ParamError for "after".
func AppendInputItems(dst []byte, id string, input []byte, q ListQuery) ([]byte, error) {
	sc := jsonx.NewScanner(jsonx.View(input))
	arr, ok := sc.Root()
	var items []jsonx.Value
	if ok && arr.Kind == jsonx.Array {
		sc.Each(arr, func(_ string, v jsonx.Value) bool {
			items = append(items, v)
			return true
		})
	}
	base := strings.TrimPrefix(id, "resp_")
	ids := make([]string, len(items))
	for k, it := range items {
		ids[k] = inputItemID(&sc, it, base, k)
	}
	// order[j] is the index in items of the j-th item of the list.
	order := make([]int, len(items))
	for j := range order {
		order[j] = j
		if !q.Asc {
			order[j] = len(items) - 1 - j
		}
	}
	start := 0
	if q.After != "" {
		start = -1
		for j, k := range order {
			if ids[k] == q.After {
				start = j + 1
				break
			}
		}
		if start < 0 {
			return dst, translate.Errorf("after", "no input item of response %q has id %q", clip(id), clip(q.After))
		}
	}
	limit := q.Limit
	if limit < 1 {
		limit = DefaultListLimit
	}
	end := min(start+limit, len(order))
	page := order[start:end]
	dst = append(dst, `{"object":"list","data":[`...)
	for j, k := range page {
		if j > 0 {
			dst = append(dst, ',')
		}
		dst = appendInputItem(dst, &sc, items[k], ids[k])
	}
	dst = append(dst, `],"first_id":`...)
	if len(page) > 0 {
		dst = jsonx.AppendString(dst, ids[page[0]])
		dst = append(dst, `,"last_id":`...)
		dst = jsonx.AppendString(dst, ids[page[len(page)-1]])
	} else {
		dst = append(dst, `null,"last_id":null`...)
	}
	dst = append(dst, `,"has_more":`...)
	dst = jsonx.AppendBool(dst, end < len(order))
	return append(dst, '}'), nil
}

// inputItemType returns an item's type: its "type", or "message" for an item with a role
// and no type (OpenAI's EasyInputMessage).
func inputItemType(sc *jsonx.Scanner, it jsonx.Value) string {
	if t := sc.Get(it, "type"); t.Kind == jsonx.String {
		return t.Str
	}
	if sc.Get(it, "role").Exists() {
		return "message"
	}
	return ""
}

// inputItemID returns the item's own id, or one made of the response id base and the
// item's position k.
func inputItemID(sc *jsonx.Scanner, it jsonx.Value, base string, k int) string {
	if v := sc.Get(it, "id"); v.Kind == jsonx.String && v.Str != "" {
		return v.Str
	}
	prefix := "item_"
	switch inputItemType(sc, it) {
	case "message":
		prefix = "msg_"
	case "function_call":
		prefix = "fc_"
	case "function_call_output":
		prefix = "fco_"
	case "reasoning":
		prefix = "rs_"
	}
	return prefix + base + "_in" + strconv.Itoa(k)
}

// appendInputItem appends item it with id: a message in OpenAI's listed form, any other
// item as it was stored with its id added when it had none.
func appendInputItem(dst []byte, sc *jsonx.Scanner, it jsonx.Value, id string) []byte {
	if it.Kind != jsonx.Object {
		return append(dst, "null"...)
	}
	if inputItemType(sc, it) == "message" {
		role := sc.Get(it, "role").Str
		dst = append(dst, `{"id":`...)
		dst = jsonx.AppendString(dst, id)
		dst = append(dst, `,"type":"message","role":`...)
		dst = jsonx.AppendString(dst, role)
		dst = append(dst, `,"content":`...)
		switch c := sc.Get(it, "content"); c.Kind {
		case jsonx.String:
			if role == "assistant" {
				dst = append(dst, `[{"type":"output_text","annotations":[],"text":`...)
			} else {
				dst = append(dst, `[{"type":"input_text","text":`...)
			}
			dst = jsonx.AppendString(dst, c.Str)
			dst = append(dst, "}]"...)
		case jsonx.Array:
			dst = append(dst, c.Raw...)
		default:
			dst = append(dst, "[]"...)
		}
		dst = append(dst, `,"status":`...)
		dst = jsonx.AppendRawOr(dst, sc.Get(it, "status").Raw, `"completed"`)
		return append(dst, '}')
	}
	dst = append(dst, `{"id":`...)
	dst = jsonx.AppendString(dst, id)
	sc.Each(it, func(k string, v jsonx.Value) bool {
		if k != "id" {
			dst = append(dst, ',')
			dst = jsonx.AppendString(dst, k)
			dst = append(dst, ':')
			dst = append(dst, v.Raw...)
		}
		return true
	})
	return append(dst, '}')
}
