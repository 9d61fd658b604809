package translate

import (
	"errors"
	"strconv"
	"strings"
)

// logprobs decodes a candidate's logprobsResult ({chosenCandidates: [{token, tokenId,
// logProbability}], topCandidates: [{candidates: [...]}]}, one entry per decoding step)
// into d.lp, reusing the decoder's buffers. Top alternatives beyond the chosen tokens are
// ignored; a step without topCandidates has no Top.
func (d *geminiStream) logprobs(raw string) error {
	if raw[0] != '{' {
		return geminiLogprobsError("logprobsResult is not an object")
	}
	var chosen, top string
	geminiFields(raw, func(k, v string) {
		switch k {
		case "chosenCandidates":
			chosen = v
		case "topCandidates":
			top = v
		}
	})
	if !geminiArrayOrAbsent(chosen) || !geminiArrayOrAbsent(top) {
		return geminiLogprobsError("logprobsResult candidates are not arrays")
	}
	var err error
	geminiElements(chosen, func(c string) bool {
		var t TopLogprob
		if t, err = geminiLogprobCandidate(c); err != nil {
			return false
		}
		d.lp = append(d.lp, TokenLogprob{Token: t.Token, Logprob: t.Logprob})
		return true
	})
	if err != nil || top == "" || top == "null" {
		return err
	}
	// The Top slices are cut from d.lpTop once it is complete, so that a growing
	// d.lpTop never leaves an earlier step pointing at a stale array.
	d.lpTop = d.lpTop[:0]
	var bounds []int
	step := 0
	geminiElements(top, func(s string) bool {
		if step >= len(d.lp) {
			return false
		}
		step++
		if !strings.HasPrefix(s, "{") {
			err = geminiLogprobsError("topCandidates entry is not an object")
			return false
		}
		var cands string
		geminiFields(s, func(k, v string) {
			if k == "candidates" {
				cands = v
			}
		})
		if !geminiArrayOrAbsent(cands) {
			err = geminiLogprobsError("topCandidates.candidates is not an array")
			return false
		}
		geminiElements(cands, func(c string) bool {
			var t TopLogprob
			if t, err = geminiLogprobCandidate(c); err != nil {
				return false
			}
			d.lpTop = append(d.lpTop, t)
			return true
		})
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

// geminiLogprobCandidate decodes one LogprobsResult.Candidate. A missing logProbability is
// 0, the proto default; a missing token is "".
func geminiLogprobCandidate(c string) (TopLogprob, error) {
	if !strings.HasPrefix(c, "{") {
		return TopLogprob{}, geminiLogprobsError("logprobs candidate is not an object")
	}
	var t TopLogprob
	var err error
	geminiFields(c, func(k, v string) {
		switch k {
		case "token":
			t.Token = geminiRawString(v)
		case "logProbability":
			// proto3 JSON may quote a float ("-Infinity", "NaN"); the encoder writes
			// non-finite values as OpenAI's -9999.
			// An out-of-range value parses as ±Inf, which is what it means.
			if t.Logprob, err = strconv.ParseFloat(strings.Trim(v, `"`), 64); err != nil && !errors.Is(err, strconv.ErrRange) {
				err = geminiLogprobsError("logProbability " + geminiSnippet(v) + " is not a number")
			} else {
				err = nil
			}
		}
	})
	return t, err
}

func geminiLogprobsError(msg string) *UpstreamError {
	return &UpstreamError{Status: 502, Type: "api_error", Message: "decoding gemini event: " + msg}
}

func geminiArrayOrAbsent(raw string) bool {
	return raw == "" || raw == "null" || raw[0] == '['
}

// geminiLastTextPart returns the index of the last part of parts with answer text (not a
// thought, not a call), which carries the candidate's logprobs in its chunk; -1 if none.
func geminiLastTextPart(parts string) int {
	last, n := -1, 0
	geminiElements(parts, func(p string) bool {
		var text string
		other := false
		geminiFields(p, func(k, raw string) {
			switch k {
			case "text":
				text = raw
			case "functionCall":
				other = true
			case "thought":
				other = other || raw == "true"
			}
		})
		if !other && len(text) > 2 && text[0] == '"' {
			last = n
		}
		n++
		return true
	})
	return last
}
