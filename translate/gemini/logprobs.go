package gemini

import (
	"errors"
	"strconv"
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// logprobs decodes a candidate's logprobsResult ({chosenCandidates: [{token, tokenId,
// logProbability}], topCandidates: [{candidates: [...]}]}, one entry per decoding step)
// into d.lp, reusing the decoder's buffers. Top alternatives beyond the chosen tokens are
// ignored; a step without topCandidates has no Top.
func (d *geminiStream) logprobs(v jsonx.Value) error {
	if v.Kind != jsonx.Object {
		return geminiLogprobsError("logprobsResult is not an object")
	}
	sc := &d.sc
	var chosen, top jsonx.Value
	walkObject(sc, v.At, func(k string) bool {
		switch k {
		case "chosenCandidates":
			return sc.Value(&chosen)
		case "topCandidates":
			return sc.Value(&top)
		}
		return sc.Skip()
	})
	if !geminiArrayOrAbsent(chosen) || !geminiArrayOrAbsent(top) {
		return geminiLogprobsError("logprobsResult candidates are not arrays")
	}
	var err error
	if chosen.Kind == jsonx.Array {
		walkArray(sc, chosen.At, func(int) bool {
			var t translate.TopLogprob
			if t, err = d.logprobCandidate(); err != nil {
				return false
			}
			d.lp = append(d.lp, translate.TokenLogprob{Token: t.Token, Logprob: t.Logprob})
			return true
		})
	}
	if err != nil || top.Kind != jsonx.Array {
		return err
	}
	// The Top slices are cut from d.lpTop once it is complete, so that a growing
	// d.lpTop never leaves an earlier step pointing at a stale array.
	d.lpTop = d.lpTop[:0]
	var bounds []int
	walkArray(sc, top.At, func(step int) bool {
		if step >= len(d.lp) {
			return false
		}
		if sc.Peek() != '{' {
			err = geminiLogprobsError("topCandidates entry is not an object")
			return false
		}
		var cands jsonx.Value
		walkObject(sc, sc.Pos(), func(k string) bool {
			if k == "candidates" {
				return sc.Value(&cands)
			}
			return sc.Skip()
		})
		if !geminiArrayOrAbsent(cands) {
			err = geminiLogprobsError("topCandidates.candidates is not an array")
			return false
		}
		if cands.Kind == jsonx.Array {
			resume := sc.Pos()
			walkArray(sc, cands.At, func(int) bool {
				var t translate.TopLogprob
				if t, err = d.logprobCandidate(); err != nil {
					return false
				}
				d.lpTop = append(d.lpTop, t)
				return true
			})
			sc.Seek(resume)
		}
		bounds = append(bounds, len(d.lpTop))
		return err == nil
	})
	if err != nil {
		return err
	}
	start := 0
	for i, end := range bounds {
		d.lp[i].Top = d.lpTop[start:end:end]
		start = end
	}
	return nil
}

// logprobCandidate decodes the LogprobsResult.Candidate at the cursor. A missing
// logProbability is 0, the proto default; a missing token is "".
func (d *geminiStream) logprobCandidate() (translate.TopLogprob, error) {
	sc := &d.sc
	if sc.Peek() != '{' {
		return translate.TopLogprob{}, geminiLogprobsError("logprobs candidate is not an object")
	}
	var t translate.TopLogprob
	var err error
	walkObject(sc, sc.Pos(), func(k string) bool {
		var v jsonx.Value
		switch k {
		case "token":
			ok := sc.Value(&v)
			t.Token = sc.Unquote(v.Raw)
			return ok
		case "logProbability":
			ok := sc.Value(&v)
			// proto3 JSON may quote a float ("-Infinity", "NaN"); the encoder writes
			// non-finite values as OpenAI's -9999.
			// An out-of-range value parses as ±Inf, which is what it means.
			if t.Logprob, err = strconv.ParseFloat(strings.Trim(v.Raw, `"`), 64); err != nil && !errors.Is(err, strconv.ErrRange) {
				err = geminiLogprobsError("logProbability " + geminiSnippet(v.Raw) + " is not a number")
			} else {
				err = nil
			}
			return ok
		}
		return sc.Skip()
	})
	return t, err
}

func geminiLogprobsError(msg string) *translate.UpstreamError {
	return &translate.UpstreamError{Status: 502, Type: "api_error", Message: "decoding gemini event: " + msg}
}

func geminiArrayOrAbsent(v jsonx.Value) bool {
	return v.Kind == jsonx.Missing || v.Kind == jsonx.Null || v.Kind == jsonx.Array
}

// lastTextPart returns the index of the last of parts with answer text (not a thought,
// not a call), which carries the candidate's logprobs in its chunk; -1 if none.
func (d *geminiStream) lastTextPart(parts jsonx.Value) int {
	if parts.Kind != jsonx.Array {
		return -1
	}
	sc := &d.sc
	last := -1
	walkArray(sc, parts.At, func(n int) bool {
		text, other := false, false
		walkObject(sc, sc.Pos(), func(k string) bool {
			var v jsonx.Value
			ok := sc.Value(&v)
			switch k {
			case "text":
				text = v.Kind == jsonx.String && len(v.Raw) > 2
			case "functionCall":
				other = true
			case "thought":
				other = other || v.Kind == jsonx.True
			}
			return ok
		})
		if !other && text {
			last = n
		}
		return true
	})
	return last
}
