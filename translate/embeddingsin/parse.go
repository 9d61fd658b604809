package embeddingsin

import (
	"strconv"
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// Parse reads an embeddings request. body must stay unchanged while the request is used:
// the request's strings are views of it (or of the scanner's arena) and Body is body.
// Errors are *translate.ParamError values naming the member to blame.
func Parse(body string) (*translate.EmbedRequest, error) {
	if !jsonx.ValidUTF8(body) {
		return nil, translate.Errorf("", "the request body is not valid UTF-8")
	}
	sc := jsonx.NewScanner(body)
	if sc.Peek() != '{' {
		return nil, translate.Errorf("", "the request body must be a JSON object")
	}
	req := &translate.EmbedRequest{Body: body}
	var input, v jsonx.Value
	for n := 0; sc.NextField(&n); {
		key := sc.Key()
		if !sc.Value(&v) {
			break
		}
		var err error
		switch key {
		case "model":
			req.Model, err = str(v, "model")
		case "input":
			input = v
		case "dimensions":
			req.Dimensions, err = dimensions(v)
		case "encoding_format":
			req.Base64, err = encodingFormat(v)
		case "user":
			req.User, err = str(v, "user")
		case "task_type":
			req.TaskType, err = str(v, "task_type")
		}
		if err != nil {
			return nil, err
		}
	}
	if sc.Failed() || !sc.AtEnd() {
		return nil, translate.Errorf("", "the request body is not valid JSON")
	}
	if req.Model == "" {
		return nil, translate.Errorf("model", "model is required")
	}
	if input.Kind == jsonx.Missing || input.Kind == jsonx.Null {
		return nil, translate.Errorf("input", "input is required")
	}
	if err := parseInput(&sc, input, req); err != nil {
		return nil, err
	}
	return req, nil
}

func str(v jsonx.Value, param string) (string, error) {
	switch v.Kind {
	case jsonx.String:
		return v.Str, nil
	case jsonx.Null:
		return "", nil
	}
	return "", translate.Errorf(param, "%s must be a string", param)
}

func dimensions(v jsonx.Value) (int, error) {
	if v.Kind == jsonx.Null {
		return 0, nil
	}
	n, ok := tokenID(v)
	if !ok || n < 1 || n > translate.MaxEmbedDimensions {
		return 0, translate.Errorf("dimensions", "dimensions must be an integer from 1 to %d", translate.MaxEmbedDimensions)
	}
	return int(n), nil
}

func encodingFormat(v jsonx.Value) (bool, error) {
	switch {
	case v.Kind == jsonx.Null, v.Kind == jsonx.String && v.Str == "float":
		return false, nil
	case v.Kind == jsonx.String && v.Str == "base64":
		return true, nil
	}
	return false, translate.Errorf("encoding_format", `encoding_format must be "float" or "base64"`)
}

// tokenID returns the value of a JSON number that is a non-negative integer written
// without fraction or exponent.
func tokenID(v jsonx.Value) (int64, bool) {
	if v.Kind != jsonx.Number || strings.ContainsAny(v.Raw, ".eE-") {
		return 0, false
	}
	n, err := strconv.ParseInt(v.Raw, 10, 64)
	return n, err == nil
}

// parseInput reads input: a string, an array of strings, an array of token ids (one
// input) or an array of token-id arrays. Elements are counted before they are kept.
func parseInput(sc *jsonx.Scanner, input jsonx.Value, req *translate.EmbedRequest) error {
	switch input.Kind {
	case jsonx.String:
		if input.Str == "" {
			return translate.Errorf("input", "input must not be an empty string")
		}
		req.Inputs = []translate.EmbedInput{{Text: input.Str}}
		return nil
	case jsonx.Array:
	default:
		return translate.Errorf("input", "input must be a string, an array of strings, an array of token ids or an array of token-id arrays")
	}
	count, first := 0, jsonx.Missing
	sc.Each(input, func(_ string, el jsonx.Value) bool {
		if count == 0 {
			first = el.Kind
		}
		count++
		return count <= translate.MaxEmbedInputs
	})
	switch {
	case count == 0:
		return translate.Errorf("input", "input must not be an empty array")
	case first == jsonx.Number: // one input of token ids
		budget := translate.MaxEmbedTokenIDs
		ids, err := tokenIDs(sc, input, "input", &budget)
		if err != nil {
			return err
		}
		req.Tokens, req.Inputs = true, []translate.EmbedInput{{Tokens: ids}}
		return nil
	case count > translate.MaxEmbedInputs:
		return translate.Errorf("input", "input holds more than %d inputs", translate.MaxEmbedInputs)
	}
	req.Tokens = first == jsonx.Array
	req.Inputs = make([]translate.EmbedInput, 0, count)
	budget := translate.MaxEmbedTokenIDs
	var err error
	sc.Each(input, func(_ string, el jsonx.Value) bool {
		param := "input[" + strconv.Itoa(len(req.Inputs)) + "]"
		switch {
		case req.Tokens && el.Kind == jsonx.Array:
			var ids []int64
			if ids, err = tokenIDs(sc, el, param, &budget); err == nil {
				req.Inputs = append(req.Inputs, translate.EmbedInput{Tokens: ids})
			}
		case !req.Tokens && el.Kind == jsonx.String && el.Str != "":
			req.Inputs = append(req.Inputs, translate.EmbedInput{Text: el.Str})
		case !req.Tokens && el.Kind == jsonx.String:
			err = translate.Errorf(param, "an input must not be an empty string")
		case req.Tokens:
			err = translate.Errorf(param, "must be an array of token ids, as input[0] is")
		default:
			err = translate.Errorf(param, "must be a string, as input[0] is")
		}
		return err == nil
	})
	return err
}

// tokenIDs reads the token-id array v, not empty, taking its ids from *budget: the
// request's ids left (translate.MaxEmbedTokenIDs), counted before each is kept.
func tokenIDs(sc *jsonx.Scanner, v jsonx.Value, param string, budget *int) ([]int64, error) {
	var ids []int64
	var err error
	sc.Each(v, func(_ string, el jsonx.Value) bool {
		if *budget--; *budget < 0 {
			err = translate.Errorf("input", "input holds more than %d token ids", translate.MaxEmbedTokenIDs)
			return false
		}
		id, ok := tokenID(el)
		if !ok {
			err = translate.Errorf(param+"["+strconv.Itoa(len(ids))+"]", "a token id must be a non-negative integer")
			return false
		}
		ids = append(ids, id)
		return true
	})
	if err == nil && len(ids) == 0 {
		err = translate.Errorf(param, "a token-id array must not be empty")
	}
	return ids, err
}
