package messagesin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agate-gateway/agate/internal/jsonx"
)

// messagesArrays are checkMessages' specification cases: the messages of the recordings
// (Claude Code's request, scenario d's histories) as written (role first) and with every
// object's members sorted (content first, as anthropic-sdk-python and encoding/json write
// them: the bench's bodies), and arrays where the content comes first for each role and
// each verdict.
func messagesArrays(t testing.TB) []string {
	var arrays []string
	for _, name := range []string{"claude-code-2.1.330.request.json", "history-10k.json", "history-100k.json"} {
		body, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		var req struct{ Messages json.RawMessage }
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		var sorted any // encoding/json writes a map's members sorted
		if err := json.Unmarshal(req.Messages, &sorted); err != nil {
			t.Fatal(err)
		}
		out, err := json.Marshal(sorted)
		if err != nil {
			t.Fatal(err)
		}
		arrays = append(arrays, string(req.Messages), string(out))
	}
	return append(arrays,
		`[{"content":"hi","role":"user"},{"content":"","role":"system"},{"content":"a","role":"assistant"}]`,
		`[{"content":null,"role":"system"},{"content":null,"role":"user"},{"content":5,"role":"user"}]`,
		`[{"content":[],"role":"user"},{"content":[],"role":"system"},{"content":[],"role":"assistant"}]`,
		`[{"content":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"role":"system"}]`,
		`[{"content":[{"type":"text","text":"s","cache_control":"x"}],"role":"system"}]`,
		`[{"content":[{"type":"tool_use","id":"t","name":"f","input":{}}],"role":"system"}]`,
		`[{"content":[{"content":"r","tool_use_id":"t","type":"tool_result"}],"role":"user"}]`,
		`[{"content":[{"content":[{"text":"r","type":"text"}],"tool_use_id":"t","type":"tool_result"}],"role":"assistant"}]`,
		`[{"content":[{"content":4,"tool_use_id":"t","type":"tool_result"}],"role":"user"}]`,
		`[{"content":[{"id":"t","input":{"a":[1,{"b":null}]},"name":"f","type":"tool_use"}],"role":"assistant"}]`,
		`[{"content":[{"id":"t","input":{},"name":"f","type":"tool_use"}],"role":"user"}]`,
		`[{"content":[{"id":"t","input":{},"type":"tool_use"}],"role":"assistant"}]`,
		`[{"content":[{"data":"x","type":"redacted_thinking"},{"id":"srv~1","type":"server_tool_use"}],"role":"assistant"}]`,
		`[{"content":[{"type":"image","source":{}}],"role":"user"}]`,
		`[{"content":"a","content":5,"role":"user","role":"x"}]`,
		`[{"content":"a","role":"us\u0065r"}]`,
		`[{"content":"a","role":"bot"}]`,
		`[{"content":"a"}]`,
		`[{"content":[{"text":"a","type":"text"},"x"],"role":"user"}]`,
		`[{"content":[{"text":"a","type":"text"},{"text":"b" "type":"text"}],"role":"user"}]`,
		`[{"content":[{"text":"a","type":"text"}],"role":"user"},]`,
		`[{"content":[{"id":"t","input":{},"name":"f","type":"tool_use","type":"x","name":5}],"role":"assistant"}]`,
		`[{"content":[{"type":"tool_use","id":"t","name":"f","input":{},"id":"u"}],"role":"assistant"}]`,
		`[{"content":[{"typ\u0065":"text","text":"a"},{ "type":"text","text":"b" },{"type" :"text","text":"c"}],"role":"user"}]`,
		`[{"content":[{"content":"r","tool_use_id":"t","type":"tool_result"},{"content":"r","tool_use_id":5,"type":"tool_result"}],"role":"user"}]`,
		`[{"content":[{"type":"text","text":"a"}},"role":"user"}]`,
		`[{"content":[{"type":"text","text":"a",}],"role":"user"}]`,
	)
}

// FuzzCheckMessages holds checkMessages to the pass it replaced (checkMessageBefore,
// which skipped a content written before the role and read it again once the role was
// known): the same messages counted, the same verdict, the cursor at the same place.
func FuzzCheckMessages(f *testing.F) {
	for _, a := range messagesArrays(f) {
		if len(a) < 32<<10 { // the 100 KB history mutates slowly and tells no more
			f.Add(a)
		}
	}
	f.Fuzz(func(t *testing.T, s string) { checkAsBefore(t, s) })
}

// TestCheckMessages is FuzzCheckMessages' property on its seeds, which the first pass
// vouches for and refuses both.
func TestCheckMessages(t *testing.T) {
	vouched := 0
	for _, s := range messagesArrays(t) {
		if checkAsBefore(t, s) {
			vouched++
		}
	}
	if vouched < 8 {
		t.Errorf("checkMessages vouched for %d arrays only", vouched)
	}
}

// checkAsBefore checks checkMessages against checkMessagesBefore on s and reports
// whether it vouched for s.
func checkAsBefore(t *testing.T, s string) bool {
	now := parser{sc: jsonx.NewScanner(s)}
	n, ok := now.checkMessages()
	before := parser{sc: jsonx.NewScanner(s)}
	wn, wok := before.checkMessagesBefore()
	if n != wn || ok != wok || ok && now.sc.Pos() != before.sc.Pos() {
		t.Fatalf("checkMessages(%q) = %d, %v at %d; before: %d, %v at %d", s, n, ok, now.sc.Pos(), wn, wok, before.sc.Pos())
	}
	return ok
}

// checkMessagesBefore is checkMessages as it was before checkContentAll, before a
// tool_result's string content was taken as readBlock checked it and before readBlock
// matched names as words (#55, sixth session), the reference FuzzCheckMessages holds it
// to.
func (p *parser) checkMessagesBefore() (n int, ok bool) {
	sc := &p.sc
	if sc.Peek() != '[' {
		return 0, false
	}
	for i := 0; sc.NextElem(&i); {
		one, ok := p.checkMessageBefore()
		if !ok {
			return 0, false
		}
		n += one
	}
	return n, !sc.Failed()
}

// checkMessageBefore is checkMessage as it was: a content written before the role
// skipped, then read again by checkContent once the role is known.
func (p *parser) checkMessageBefore() (one int, ok bool) {
	sc := &p.sc
	if sc.Peek() != '{' {
		return 0, false
	}
	var role jsonx.Value
	content := -1
	checked := false
	for k := 0; sc.NextField(&k); {
		switch sc.Key() {
		case "role":
			if role.Kind != jsonx.Missing {
				ok = sc.Skip()
			} else {
				ok = sc.ValueRaw(&role)
			}
		case "content":
			switch {
			case checked || content >= 0:
				ok = sc.Skip()
			case role.Kind != jsonx.Missing:
				one, ok = p.checkContentBefore(role)
				checked = true
			default:
				sc.Peek()
				content = sc.Pos()
				ok = sc.Skip()
			}
		default:
			ok = sc.Skip()
		}
		if !ok {
			return 0, false
		}
	}
	if sc.Failed() {
		return 0, false
	}
	if content >= 0 {
		end := sc.Pos()
		sc.Seek(content)
		if one, ok = p.checkContentBefore(role); !ok {
			return 0, false
		}
		sc.Seek(end)
		checked = true
	}
	return one, checked
}

// checkContentBefore is checkContent as it was.
func (p *parser) checkContentBefore(role jsonx.Value) (one int, ok bool) {
	if role.Kind != jsonx.String {
		return 0, false
	}
	switch role.Str {
	case "system":
		return p.checkTextBefore()
	case "user":
		return p.checkBlocksBefore(true)
	case "assistant":
		return p.checkBlocksBefore(false)
	}
	return 0, false
}

// checkBlocksBefore is checkBlocks as it was.
func (p *parser) checkBlocksBefore(user bool) (one int, ok bool) {
	sc := &p.sc
	switch sc.Peek() {
	case '"':
		return 1, sc.SkipString()
	case '[':
		for i := 0; sc.NextElem(&i); {
			var b blockHead
			if !p.readBlockBefore(&b) {
				return 0, false
			}
			var counts bool
			if user {
				counts, ok = p.checkUserBlockBefore(&b)
			} else {
				counts, ok = p.checkAssistantBlock(&b)
			}
			if !ok {
				return 0, false
			}
			if counts {
				one = 1
			}
		}
		return one, !sc.Failed()
	}
	return 0, false
}

// checkUserBlockBefore is checkUserBlock as it was: every tool_result content read again.
func (p *parser) checkUserBlockBefore(b *blockHead) (counts, ok bool) {
	switch {
	case b.typeIs("text"):
		return true, b.is(bhText) && b.cacheOK()
	case b.typeIs("tool_result"):
		if !b.is(bhToolUseID) || !b.cacheOK() {
			return false, false
		}
		if b.content < 0 {
			return true, true
		}
		sc := &p.sc
		end := sc.Pos()
		sc.Seek(b.content)
		ok = p.checkResultContentBefore()
		sc.Seek(end)
		return true, ok
	}
	return false, false
}

// checkTextBefore is checkText over readBlockBefore.
func (p *parser) checkTextBefore() (one int, ok bool) {
	sc := &p.sc
	switch sc.Peek() {
	case '"':
		at := sc.Pos()
		if !sc.SkipString() {
			return 0, false
		}
		if sc.Pos()-at > 2 {
			one = 1
		}
		return one, true
	case 'n':
		var v jsonx.Value
		return 0, sc.Value(&v) && v.Kind == jsonx.Null
	case '[':
		for i := 0; sc.NextElem(&i); {
			var b blockHead
			if !p.readBlockBefore(&b) || !b.typeIs("text") || !b.is(bhText) || !b.cacheOK() {
				return 0, false
			}
			one = 1
		}
		return one, !sc.Failed()
	}
	return 0, false
}

// checkResultContentBefore is checkResultContent over readBlockBefore.
func (p *parser) checkResultContentBefore() bool {
	sc := &p.sc
	switch sc.Peek() {
	case '"':
		return sc.SkipString()
	case 'n':
		var v jsonx.Value
		return sc.Value(&v) && v.Kind == jsonx.Null
	case '[':
		for i := 0; sc.NextElem(&i); {
			var b blockHead
			if !p.readBlockBefore(&b) || !b.typeIs("text") || !b.is(bhText) || !b.cacheOK() {
				return false
			}
		}
		return !sc.Failed()
	}
	return false
}

// readBlockBefore is readBlock as it was: every name read by NextField.
func (p *parser) readBlockBefore(b *blockHead) bool {
	sc := &p.sc
	b.content = -1
	if sc.Peek() != '{' {
		return false
	}
	for k := 0; sc.NextField(&k); {
		key := sc.Key()
		if key == "content" && b.content < 0 {
			sc.Peek()
			b.content = sc.Pos()
		}
		var v *jsonx.Value
		if i := blockMember(key); i >= 0 {
			v = &b.v[i]
		}
		var ok bool
		if v == nil || v.Kind != jsonx.Missing {
			ok = sc.Skip()
		} else {
			ok = sc.ValueRaw(v)
		}
		if !ok {
			return false
		}
	}
	return !sc.Failed()
}
