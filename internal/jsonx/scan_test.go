package jsonx

import (
	"encoding/json"
	"log/slog"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// validJSONCases are inputs validJSON must judge as RFC 8259 does, except that strings may
// hold bytes that are not UTF-8.
var validJSONCases = []struct {
	name string
	in   string
	want bool
}{
	{name: "empty", in: ``, want: false},
	{name: "only space", in: " \t\r\n", want: false},
	{name: "object", in: `{"a":1}`, want: true},
	{name: "space around", in: " \t\r\n{ \"a\" : [ 1 , 2 ] }\r\n ", want: true},
	{name: "scalars at top", in: `"x"`, want: true},
	{name: "trailing comma in object", in: `{"a":1,}`, want: false},
	{name: "trailing comma in array", in: `[1,]`, want: false},
	{name: "leading comma", in: `[,1]`, want: false},
	{name: "missing comma", in: `[1 2]`, want: false},
	{name: "missing colon", in: `{"a" 1}`, want: false},
	{name: "unquoted key", in: `{a:1}`, want: false},
	{name: "two values", in: `{}{}`, want: false},
	{name: "unclosed", in: `{"a":[1}`, want: false},
	{name: "form feed is not space", in: "\f{}", want: false},
	{name: "leading zero", in: `01`, want: false},
	{name: "minus zero", in: `-0`, want: true},
	{name: "bare minus", in: `-`, want: false},
	{name: "fraction without digits", in: `1.`, want: false},
	{name: "fraction without int", in: `.5`, want: false},
	{name: "exponent without digits", in: `1e+`, want: false},
	{name: "number forms", in: `[0,-1,1.5,1e5,1E-5,-0.0e+0]`, want: true},
	{name: "plus sign", in: `+1`, want: false},
	{name: "literals", in: `[true,false,null]`, want: true},
	{name: "short literal", in: `[tru]`, want: false},
	{name: "capital literal", in: `True`, want: false},
	{name: "escapes", in: `"\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00"`, want: true},
	{name: "bad escape", in: `"\x"`, want: false},
	{name: "short unicode escape", in: `"\u12"`, want: false},
	{name: "non-hex unicode escape", in: `"\u12g4"`, want: false},
	{name: "lone surrogate", in: `"\ud800"`, want: true},
	{name: "control character", in: "\"a\tb\"", want: false},
	{name: "raw DEL", in: "\"\x7f\"", want: true},
	{name: "invalid UTF-8", in: "\"\xff\xfe\"", want: true},
	{name: "unterminated string", in: `"abc`, want: false},
	{name: "escape at end", in: `"abc\`, want: false},
	{name: "NUL outside strings", in: "{}\x00", want: false},
	{name: "deep nesting", in: deep(1000), want: true},
	{name: "empty containers with space", in: "[ { } , [\n] ,{},[]]", want: true},
	{name: "array closed as object", in: `[1}`, want: false},
	{name: "object closed as array", in: `{"a":1]`, want: false},
	{name: "escaped key", in: `{"a\"b":{"c\\":[]}}`, want: true},
	{name: "missing value", in: `{"a":}`, want: false},
	{name: "NUL as a value", in: "[\x00]", want: false},
	{name: "key not a string", in: `{"a":1,2:3}`, want: false},
}

func deep(n int) string {
	b := make([]byte, 0, 4*n+1)
	for range n {
		b = append(b, `[{"a":`...)
	}
	b = append(b, '1')
	for range n {
		b = append(b, "}]"...)
	}
	return string(b)
}

func TestValidJSON(t *testing.T) {
	for _, tt := range validJSONCases {
		t.Run(tt.name, func(t *testing.T) {
			if got := Valid(tt.in); got != tt.want {
				t.Errorf("Valid(%q) = %v, want %v", tt.in, got, tt.want)
			}
			if ref := gjson.Valid(tt.in); ref != tt.want {
				t.Errorf("gjson.Valid(%q) = %v, want %v", tt.in, ref, tt.want)
			}
		})
	}
}

// TestJSONScanner_Strings pins decoding: substrings when there is nothing to decode, and
// encoding/json's decoding of escapes (an unpaired surrogate is U+FFFD, and the escape
// after it is its own character) otherwise. Bytes that are not UTF-8 are kept as they are.
func TestJSONScanner_Strings(t *testing.T) {
	for _, raw := range []string{
		`""`, `"plain"`, `"caf` + "\xc3\xa9" + `"`, `"a\nb"`, `"\"\\\/\b\f\n\r\t"`,
		`"\u00e9\u4e2d\ud83d\ude00"`, `"\ud800"`, `"\ud800x"`, `"\ud800\u0041"`, `"\udc00\ud800"`,
		`"\ud800\n"`, `"\ud83d\ude00\ud83d"`, `"x\u0000y"`, `"` + "\xff" + `\n"`,
	} {
		sc := Scanner{s: raw}
		var v Value
		if !sc.Value(&v) {
			t.Errorf("%s: not read", raw)
			continue
		}
		if want := decodeString(raw); v.Str != want {
			t.Errorf("%s: decoded %q, encoding/json %q", raw, v.Str, want)
		}
		if v.Raw != raw || v.Kind != String {
			t.Errorf("%s: raw %q kind %d", raw, v.Raw, v.Kind)
		}
	}
}

// TestJSONScanner_StringsAtEveryOffset: unescape moves plain bytes eight at a time and
// writes past a run's end; each escape (the two-byte ones, \u escapes, a surrogate pair,
// an escaped backslash before a quote) decodes as encoding/json has it at every offset
// over two blocks, with short and long runs after it.
func TestJSONScanner_StringsAtEveryOffset(t *testing.T) {
	escapes := []string{`\"`, `\\`, `\/`, `\n`, `\t`, `\b`, `\f`, `\r`, `\u00e9`, `\u4e2d`, `\ud83d\ude00`, `\ud800`, `\\\"`, `\\u0041`}
	for _, esc := range escapes {
		for at := 0; at < 140; at++ {
			for _, tail := range []int{0, 3, 70} {
				raw := `"` + strings.Repeat("a", at) + esc + strings.Repeat("b", tail) + `\n"`
				sc := Scanner{s: raw}
				got, ok := sc.Str()
				if want := decodeString(raw); !ok || got != want {
					t.Fatalf("%s at %d, %d after: decoded %q (ok %v), encoding/json %q", esc, at, tail, got, ok, want)
				}
			}
		}
	}
}

// TestAppendDecoded_DenseEscapesAtEveryOffset: decodeEscaped drops backslashes a block at
// a time and writes the letters of \n and the like where they went; each escape (a \u
// escape stops the block) decodes as encoding/json has it at every offset over three
// blocks, in a JSON text sent as a string (an escaped quote every few bytes; where the
// escape falls into one of its escapes, the string is not checked), a run of
// backslashes across each block's end, and strings of every length up to four blocks
// (the last block read from a copy), appended after bytes already in dst; and so does
// the byte-at-a-time decoding of machines without AVX2.
func TestAppendDecoded_DenseEscapesAtEveryOffset(t *testing.T) {
	dense := strings.Repeat(`{\"a\":\"b\\c\"},`, 16)
	check := func(lit string) {
		t.Helper()
		want := decodeString(`"` + lit + `"`)
		if strings.HasPrefix(want, "<invalid") {
			return // an escape inserted into another
		}
		got := AppendDecoded([]byte("dst:"), lit)
		if string(got) != "dst:"+want {
			t.Fatalf("AppendDecoded(%q) = %q, encoding/json %q", lit, got[min(4, len(got)):], want)
		}
		out := make([]byte, len(lit)) // the path without AVX2
		if _, n := decodeRun(out, lit, 0, 0, len(lit)); string(out[:n]) != want {
			t.Fatalf("decodeRun(%q) = %q, encoding/json %q", lit, out[:n], want)
		}
	}
	escapes := []string{`\"`, `\\`, `\/`, `\n`, `\t`, `\b`, `\f`, `\r`, `\u003e`, `\u00e9`, `\u4e2d`,
		`\ud83d\ude00`, `\ud800`, `\\\"`, `\\\\\\\\`, `\\u0041`}
	for _, esc := range escapes {
		for at := 0; at < 3*blockSize; at++ {
			check(dense[:at] + esc + dense[at:])
			check(strings.Repeat("a", at) + esc + strings.Repeat("b", 3*blockSize-at))
		}
	}
	for n := range 4 * blockSize {
		check(strings.TrimSuffix(dense[:n], `\`))
		check(strings.Repeat(`\\`, n/2))
		check(strings.Repeat(`\n`, n/2))
	}
}

// TestNextField_CompactAndSpaced: NextField reads the same names and values from an
// object written compactly (its fast path: comma, name, colon) as from the same object
// with whitespace around every token, from names with escapes (which the fast path
// leaves to the general one), from names that cross a block boundary, and it refuses
// the same faults.
func TestNextField_CompactAndSpaced(t *testing.T) {
	long := strings.Repeat("n", 70)
	for _, c := range []struct {
		compact string
		ok      bool
	}{
		{`{"a":1,"b":"x","c":[1,2],"d":{"e":null}}`, true},
		{`{"a":1,"b\"q":2,"c\u0041":3}`, true},
		{`{"a":1,"` + long + `":2,"z":3}`, true},
		{`{"a":"` + long + `","b":2}`, true},
		{`{"a":1,"b"2}`, false},
		{`{"a":1,"b`, false},
		{`{"a":1,"b":`, false},
		{`{"a":1,}`, false},
		{`{"a":1,"\x":2}`, false},
	} {
		spaced := strings.NewReplacer(",", " ,\n ", ":", " :\t", "{", "{ ").Replace(c.compact)
		if strings.Contains(c.compact, `\`) || strings.Contains(c.compact, long) {
			spaced = strings.ReplaceAll(c.compact, `,"`, ` , "`) // the strings' own bytes stay
		}
		read := func(s string) (names []string, ok bool) {
			sc := NewScanner(s)
			for n := 0; sc.NextField(&n); {
				var v Value
				if !sc.Value(&v) {
					return names, false
				}
				names = append(names, sc.Key()+"="+strconv.Itoa(int(v.Kind))+v.Str) // Raw holds the spaces
			}
			return names, !sc.Failed()
		}
		got, ok := read(c.compact)
		want, wantOK := read(spaced)
		if ok != c.ok || wantOK != c.ok || strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: read %q (ok %v), spaced %s read %q (ok %v), want ok %v", c.compact, got, ok, spaced, want, wantOK, c.ok)
		}
	}
}

// TestSkip_MemberNamesAtEveryOffset: Skip reads a member name written compactly from the
// kept block mask (nameEnd) and any other from memberName; at every offset over two
// blocks, so that names start, end and have their colon on either side of a boundary,
// Valid agrees with encoding/json on names that are compact, escaped, spaced, cut short
// or followed by something other than a colon.
func TestSkip_MemberNamesAtEveryOffset(t *testing.T) {
	members := []string{`"k":1`, `"k\"q":1`, `"k\u0041":1`, `"k" :1`, `"k": 1`, `"k"1`, `"k",1`,
		`"k"`, `"k`, `"k` + "\x01" + `":1`, `"k` + "\x01" + `:1`, `"a\\":{"b":[{"c":"d"}]}`, `"k":"` + strings.Repeat("v", 70) + `"`}
	for _, m := range members {
		for at := 0; at < 140; at++ {
			pad := `"` + strings.Repeat("p", at) + `"`
			for _, body := range []string{
				`{` + m + `}`,
				`[` + pad + `,{` + m + `}]`,
				`{"p":` + pad + `,` + m + `}`,
				`{"p":` + pad + `,` + m + `,"z":[]}`,
			} {
				if got, want := Valid(body), json.Valid([]byte(body)); got != want {
					t.Fatalf("Valid(%s) = %v, encoding/json %v", body, got, want)
				}
			}
		}
	}
}

// TestMemberIs: MemberIs moves past want exactly when the input at the cursor starts with
// it, never reading past the input's end, and otherwise leaves the cursor where it was.
func TestMemberIs(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{`,"content":"hi"}`, `,"content":`, true},
		{`,"content":`, `,"content":`, true}, // want is all that is left
		{`{"role":"user"}`, `{"role":`, true},
		{`,"tool_call_id":"c"}`, `,"tool_call_id":`, true}, // sixteen bytes: two whole words
		{`,"tool_calls":[]}`, `,"tool_call_id":`, false},
		{`,"tool_call_id":"c"}`, `,"tool_calls":`, false},
		{`,"content" :"hi"}`, `,"content":`, false}, // whitespace is NextField's
		{`, "content":"hi"}`, `,"content":`, false},
		{`,"Content":"hi"}`, `,"content":`, false},   // another case is NextField's, to refuse
		{`,"conten\u0074":1}`, `,"content":`, false}, // an escape in the name is NextField's
		{`,"contents":"hi"}`, `,"content":`, false},
		{`,"content`, `,"content":`, false}, // shorter than want
		{`}`, `,"role":`, false},
		{``, `,"role":`, false},
		{`,"role":`, `,"role":`, true},
		{`,"rolE":`, `,"role":`, false},
		{`X"role":`, `,"role":`, false},
		{`,"role";`, `,"role":`, false},
		// Short forms (MemberIsShort): two overlapping half-words.
		{`{"id":"c"}`, `{"id":`, true},
		{`{"id":`, `{"id":`, true},
		{`{"ix":"c"}`, `{"id":`, false},
		{`{"idx":1}`, `{"id":`, false},
		{`{"Id":"c"}`, `{"id":`, false},
		{`{ "id":"c"}`, `{"id":`, false},
		{`{"id"`, `{"id":`, false},
		{`,"id";1`, `,"id":`, false},
	} {
		in := c.in
		memberIs := (*Scanner).MemberIs
		if len(c.want) < 8 {
			memberIs = (*Scanner).MemberIsShort
		}
		sc := NewScanner(in)
		got := memberIs(&sc, c.want)
		wantPos := 0
		if c.ok {
			wantPos = len(c.want)
		}
		if got != c.ok || sc.Pos() != wantPos {
			t.Errorf("MemberIs(%q) at %q = %v at %d, want %v at %d", c.want, c.in, got, sc.Pos(), c.ok, wantPos)
		}
		// The same input further into a body: the cursor is where it starts.
		sc = NewScanner(`{"a":1` + in)
		sc.Seek(6)
		if got := memberIs(&sc, c.want); got != c.ok || sc.Pos() != 6+wantPos {
			t.Errorf("MemberIs(%q) at offset 6 of %q = %v at %d, want %v at %d", c.want, `{"a":1`+c.in, got, sc.Pos(), c.ok, 6+wantPos)
		}
	}
}

// TestEndIs: EndIs moves past the closing byte it is asked for when it is at the cursor,
// and nothing else: not past whitespace (NextField's), not past another byte.
func TestEndIs(t *testing.T) {
	for _, c := range []struct {
		in   string
		end  byte
		want bool
	}{
		{`}`, '}', true},
		{`},{"a":1}`, '}', true},
		{`]`, ']', true},
		{` }`, '}', false},
		{`,"a":1}`, '}', false},
		{`]`, '}', false},
		{``, '}', false},
	} {
		sc := NewScanner(`{"a":1` + c.in)
		sc.Seek(6)
		wantPos := 6
		if c.want {
			wantPos = 7
		}
		if got := sc.EndIs(c.end); got != c.want || sc.Pos() != wantPos {
			t.Errorf("EndIs(%q) at %q = %v at %d, want %v at %d", c.end, c.in, got, sc.Pos(), c.want, wantPos)
		}
	}
}

// FuzzValidJSONMatchesGJSON: Valid agrees with gjson.Valid, and every string the
// scanner decodes agrees with encoding/json's decoding.
func FuzzValidJSONMatchesGJSON(f *testing.F) {
	for _, tt := range validJSONCases {
		f.Add([]byte(tt.in))
	}
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"caf\u00e9 \ud83d\ude00\n"}],"stream":true}`))
	// Strings longer than eight bytes with escapes at every offset exercise unescape's
	// eight-byte copies.
	f.Add([]byte(`"[{\"day\":\"2025-06-02\",\"rentals\":412},{\"day\":\"2025-06-03\"}]"`))
	f.Add([]byte(`"abcdefg\u00e9abcdefgh\ud83d\ude00abcdefghi\n\t\"\\\/\b\fxyz12345678\ud800abcdefgh"`))
	f.Add([]byte(`"12345678\\12345678\\1234567\"1234567890abcdef"`))
	f.Add([]byte(`"{\"sql\":\"SELECT day, count(*) AS rentals FROM rentals WHERE city = 'Paris' AND day \u003e= current_date - 7\",\"timeout_s\":10}\ud83d\ude00"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := string(b)
		if got, want := Valid(s), gjson.Valid(s); got != want {
			t.Fatalf("Valid(%q) = %v, gjson.Valid %v", s, got, want)
		}
		if len(s) > 0 && s[0] == '"' {
			sc := Scanner{s: s}
			if str, ok := sc.Str(); ok {
				if want := decodeString(s[:sc.i]); str != want {
					t.Fatalf("%q decoded %q, encoding/json %q", s[:sc.i], str, want)
				}
			}
		}
	})
}

// decodeString is encoding/json's value of the string literal raw, except that bytes that
// are not UTF-8 stay as they are (the scanner does not check them; encoding/json would
// make each U+FFFD). Such a byte is never part of an escape, so the pieces between them
// decode on their own (a surrogate pair split by one decodes as two U+FFFD, as the
// scanner has it).
func decodeString(raw string) string {
	if !utf8.ValidString(raw) {
		inner := raw[1 : len(raw)-1]
		var out strings.Builder
		piece := 0
		for i := 0; i < len(inner); {
			r, n := utf8.DecodeRuneInString(inner[i:])
			if r == utf8.RuneError && n == 1 {
				out.WriteString(decodeString(`"` + inner[piece:i] + `"`))
				out.WriteByte(inner[i])
				piece = i + 1
			}
			i += n
		}
		out.WriteString(decodeString(`"` + inner[piece:] + `"`))
		return out.String()
	}
	var s string
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return "<invalid: " + err.Error() + ">"
	}
	return s
}

// BenchmarkUnescape decodes a JSON tool result sent as a string (escaped quotes every few
// bytes, as chat histories carry them) and a prose string with a few escapes.
func BenchmarkUnescape(b *testing.B) {
	for _, bc := range []struct{ name, s string }{
		{"json-in-string", `"[{\"day\":\"2025-06-02\",\"rentals\":412},{\"day\":\"2025-06-03\",\"rentals\":388},{\"day\":\"2025-06-04\",\"rentals\":455},{\"day\":\"2025-06-05\",\"rentals\":501}]"`},
		{"prose", `"Rentals in Paris last week totalled 3,723, peaking at 702 on Saturday.\nThe forecast is dry and warm on Friday and Saturday (23 and 25 \u00b0C), with some rain on Sunday,\nso the promotion should run Friday to Saturday."`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.s)))
			for b.Loop() {
				sc := NewScanner(bc.s)
				if _, ok := sc.Str(); !ok {
					b.Fatal("invalid")
				}
			}
		})
	}
}

// BenchmarkAppendString escapes the strings encoders write most: a JSON tool result
// (quotes every few bytes), English prose with a newline, prose with non-ASCII text, and
// a streamed token's text (a few bytes, the delta of each chunk).
func BenchmarkAppendString(b *testing.B) {
	for _, bc := range []struct{ name, s string }{
		{"token", " wheels"},
		{"short", "bench"},      // a key's name, a backend's, a level: 4 to 7 bytes
		{"name", "get_weather"}, // names, ids, models: 8 to 16 bytes
		{"json-in-string", `[{"day":"2025-06-02","rentals":412},{"day":"2025-06-03","rentals":388},{"day":"2025-06-04","rentals":455},{"day":"2025-06-05","rentals":501}]`},
		{"prose", "Rentals in Paris last week totalled 3,723, peaking at 702 on Saturday. The forecast is dry and warm on Friday and Saturday (23 and 25 C),\nso the promotion should run Friday to Saturday."},
		{"answer", strings.Repeat("The safety bicycle of the 1880s, with two wheels of equal size and a chain driving the rear wheel, made cycling practical for almost everyone. ", 5)},
		{"non-ascii", "Les locations à Paris ont atteint 3 723 la semaine dernière, avec un pic de 702 samedi — prévisions : sec et chaud vendredi et samedi (23 et 25 °C)."},
	} {
		b.Run(bc.name, func(b *testing.B) {
			dst := make([]byte, 0, 1024)
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.s)))
			for b.Loop() {
				dst = AppendString(dst[:0], bc.s)
			}
		})
	}
}

// FuzzAppendStringMatchesEncodingJSON holds AppendString to its contract: the bytes
// encoding/json's Marshal writes for the same string.
func FuzzAppendStringMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{"", "plain", `q"b\s`, "<a>&b", "\u2028\u2029", "\x00\x1f\x7f", "é—€😀", "\xff\xfe", "0123456789abcdef\"", "abcdefg\xe2\x80",
		// a block or more (appendEscapedBlocks): a JSON text, characters across a block's end
		`[{"day":"2025-06-02","rentals":412},{"day":"2025-06-03","rentals":388},{"day":"2025-06-04"}]`,
		strings.Repeat("a", 62) + "é€\u2028<\x00\xff😀" + strings.Repeat("\"b", 40) + "\xe2\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
	})
}

// TestAppendString_ShortWords: strings of 8 to 32 bytes are judged from two to four
// words, which overlap unless the length is a multiple of eight, and strings of 4 to 7
// from two half-words; each byte that needs an escape (or is part of a multi-byte
// character) is found at every offset, as encoding/json writes it, and so by
// AppendSlogString as log/slog writes it.
func TestAppendString_ShortWords(t *testing.T) {
	for n := 1; n <= 33; n++ {
		for at := 0; at < n; at++ {
			for _, c := range []string{`"`, `\`, "<", ">", "&", "\x00", "\x1f", "\x7f", "\xff", "é"} {
				s := strings.Repeat("a", at) + c + strings.Repeat("b", max(n-at-len(c), 0))
				want, err := json.Marshal(s)
				if err != nil {
					t.Fatal(err)
				}
				if got := AppendString([]byte("dst:"), s); string(got) != "dst:"+string(want) {
					t.Fatalf("AppendString(%q) = %s, want %s", s, got[4:], want)
				}
				var slogOut strings.Builder
				slog.New(slog.NewJSONHandler(&slogOut, &slog.HandlerOptions{ReplaceAttr: dropTimeLevel})).Info(s)
				wantSlog := strings.TrimSuffix(strings.TrimPrefix(slogOut.String(), `{"msg":`), "}\n")
				if got := AppendSlogString([]byte("dst:"), s); string(got) != "dst:"+wantSlog {
					t.Fatalf("AppendSlogString(%q) = %s, want %s", s, got[4:], wantSlog)
				}
			}
		}
	}
}

// dropTimeLevel leaves a slog record's time and level out of the JSON handler's line.
func dropTimeLevel(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey) {
		return slog.Attr{}
	}
	return a
}

// FuzzAppendLiteralMatchesDecodeThenAppend holds AppendLiteral to its contract: for
// every checked string literal, the bytes AppendString writes for its decoded value.
func FuzzAppendLiteralMatchesDecodeThenAppend(f *testing.F) {
	for _, s := range []string{`""`, `"plain"`, `"q\"b\\s\/x"`, `"<a>&b"`, `"\u2028\u2029 \u003c\u0000\u001f"`,
		`"\n\r\t\b\f"`, `"é—€😀 \u00e9\ud83d\ude00"`, `"lone \ud800 and \udc00 and \ud800\u0041"`,
		`"{\"day\":\"2025-06-02\",\"rentals\":412}"`, "\"\u2028 raw\"", `"0123456789abcdef0123\"<"`,
		// Literals of more than a block (read from masks a block at a time).
		`"[{\"day\":\"2025-06-02\",\"rentals\":412},{\"day\":\"2025-06-03\",\"rentals\":388},{\"day\":\"2025-06-04\",\"rentals\":455}]"`,
		`"` + strings.Repeat("a", 62) + `\u00e9\ud83d\ude00` + strings.Repeat("b", 60) + `é<&>\u2028\/"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if len(raw) >= 2 {
			AppendLiteral(nil, raw[1:len(raw)-1]) // outside the contract: must only not fail
		}
		sc := NewScanner(raw)
		var v Value
		if !sc.ValueRaw(&v) || v.Kind != String || !sc.AtEnd() || !utf8.ValidString(raw) {
			return // the contract covers checked literals of a UTF-8 body
		}
		var dec Scanner
		want := AppendString([]byte("x"), dec.DecodeRaw(v.Str, len(v.Str)))
		if got := AppendLiteral([]byte("x"), v.Str); string(got) != string(want) {
			t.Fatalf("AppendLiteral(%s) = %s, want %s", raw, got, want)
		}
	})
}

func TestAppendLiteral(t *testing.T) {
	for _, tc := range []struct{ lit, want string }{
		{``, `""`},
		{`{\"a\":\"b\\\\c\"}\n`, `"{\"a\":\"b\\\\c\"}\n"`}, // written as they came
		{`a\/b`, `"a/b"`},
		{`\u00e9\u003c<>&`, `"é\u003c\u003c\u003e\u0026"`},
		{`\ud83d\ude00 \ud800x \u0000`, `"😀 ` + "\ufffd" + `x \u0000"`},
		{"\u2028 é", `"\u2028 é"`},
		// Not a checked literal, but written so: messagesin's lazy parse hands the openai
		// encoder a tool_use input object as a "literal" of the arguments string, and its
		// quotes must stop the copy (kept from a kernel shortcut that assumed them escaped).
		{`{"command": "ls"}` + strings.Repeat(" ", 60) + `{"q": "x"}`, `"{\"command\": \"ls\"}` + strings.Repeat(" ", 60) + `{\"q\": \"x\"}"`},
	} {
		if got := string(AppendLiteral(nil, tc.lit)); got != tc.want {
			t.Errorf("AppendLiteral(%s) = %s, want %s", tc.lit, got, tc.want)
		}
	}
}

// BenchmarkAppendLiteral writes the escaped literals of BenchmarkUnescape as an encoder
// does: decoded then escaped again (decode+append), or transcoded in one pass (literal).
func BenchmarkAppendLiteral(b *testing.B) {
	for _, bc := range []struct{ name, lit string }{
		{"json-in-string", `[{\"day\":\"2025-06-02\",\"rentals\":412},{\"day\":\"2025-06-03\",\"rentals\":388},{\"day\":\"2025-06-04\",\"rentals\":455},{\"day\":\"2025-06-05\",\"rentals\":501}]`},
		{"prose", `Rentals in Paris last week totalled 3,723, peaking at 702 on Saturday.\nThe forecast is dry and warm on Friday and Saturday (23 and 25 \u00b0C), with some rain on Sunday,\nso the promotion should run Friday to Saturday.`},
		{"id", `call_00A7Hc9WbQm2`}, // short literals: ids, names, roles
		{"sentence", `How many bikes were rented in Paris last week?`},
	} {
		dst := make([]byte, 0, 1024)
		b.Run(bc.name+"/decode+append", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.lit)))
			var sc Scanner
			for b.Loop() {
				sc.Reset("")
				dst = AppendString(dst[:0], sc.DecodeRaw(bc.lit, len(bc.lit)))
			}
		})
		b.Run(bc.name+"/literal", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.lit)))
			for b.Loop() {
				dst = AppendLiteral(dst[:0], bc.lit)
			}
		})
	}
}

// BenchmarkAppendDecoded decodes the escaped strings of testdata/history-10k.json an
// encoder decodes before writing them: the tool calls' arguments (a JSON text sent as a
// string, which the Anthropic and Gemini encoders send as an object) and the tool
// results, each appended to one buffer as AppendDecoded is called for each.
func BenchmarkAppendDecoded(b *testing.B) {
	body, err := os.ReadFile("testdata/history-10k.json")
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, re string }{
		{"tool-arguments", `"arguments":"((?:[^"\\]|\\.)*)"`},
		{"tool-results", `"role":"tool","content":"((?:[^"\\]|\\.)*)"`},
	} {
		var lits []string
		n := 0
		for _, m := range regexp.MustCompile(bc.re).FindAllStringSubmatch(string(body), -1) {
			lits = append(lits, m[1])
			n += len(m[1])
		}
		if len(lits) != 12 {
			b.Fatalf("%s: %d strings in the history, want 12", bc.name, len(lits))
		}
		dst := make([]byte, 0, 2*n)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				dst = dst[:0]
				for _, lit := range lits {
					dst = AppendDecoded(dst, lit)
				}
			}
		})
	}
}

// BenchmarkValid is the scanner alone over testdata/history-10k.json, the ~10 KB request
// of the end-to-end benchmark's scenario d (a copy of translate/openaichat's), whose
// tool arguments and results are escape-dense strings.
func BenchmarkValid(b *testing.B) {
	body, err := os.ReadFile("testdata/history-10k.json")
	if err != nil {
		b.Fatal(err)
	}
	s := string(body)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		if !Valid(s) {
			b.Fatal("invalid")
		}
	}
}

// floatCases are numbers exactFloat takes (the first ones) and leaves to ParseFloat.
var floatCases = []string{
	"0", "-0", "0.7", "1024", "-2", "2.0", "0.1", "0.30000000000000004"[:17], "123456789012345",
	"12345678.9012345", "-0.000000000000001", ".5", "999999999999999",
	"1234567890123456", "1e3", "1.5E-2", "1.", "-", "", ".", "1..2", "1.2.3", "+1", "0x10", "Inf",
	"179769313486231570000000000000000000000", "1_000",
}

// TestExactFloat holds exactFloat to strconv.ParseFloat bit for bit wherever it answers,
// and checks that it does answer for the numbers a request carries.
func TestExactFloat(t *testing.T) {
	for _, s := range floatCases {
		checkExactFloat(t, s)
	}
	checkFastPath(t, "exactFloat", func(s string) bool { _, ok := exactFloat(s); return ok },
		[]string{"0.7", "1024", "-2", "0", "0.000001", "123456789012345"},
		[]string{"1e3", "1234567890123456", "1.", "", "-", ".", "+1"})
}

// checkFastPath checks that the fast reader named name answers each of plain and leaves
// each of other to strconv.
func checkFastPath(t *testing.T, name string, answers func(string) bool, plain, other []string) {
	t.Helper()
	for _, s := range plain {
		if !answers(s) {
			t.Errorf("%s(%q) declined a plain number", name, s)
		}
	}
	for _, s := range other {
		if answers(s) {
			t.Errorf("%s(%q) answered; it must leave it to strconv", name, s)
		}
	}
}

func checkExactFloat(t *testing.T, s string) {
	t.Helper()
	f, ok := exactFloat(s)
	if !ok {
		return
	}
	want, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("exactFloat(%q) = %v, but ParseFloat refuses it: %v", s, f, err)
	}
	if math.Float64bits(f) != math.Float64bits(want) {
		t.Fatalf("exactFloat(%q) = %v (%#x), ParseFloat %v (%#x)", s, f, math.Float64bits(f), want, math.Float64bits(want))
	}
}

// FuzzExactFloat: on any string, exactFloat either declines or gives ParseFloat's bits.
func FuzzExactFloat(f *testing.F) {
	for _, s := range floatCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkExactFloat(t, s) })
}

var intCases = []string{"0", "7", "-7", "412", "1760728905", "-0", "007", "123456789012345678",
	"-123456789012345678", "1234567890123456789", "9223372036854775807", "-9223372036854775808",
	"9223372036854775808", "1.5", "1e3", "", "-", "+1", "12a", " 1"}

// TestSmallInt: smallInt answers plain integers of up to 18 digits as ParseInt does and
// leaves everything else to it.
func TestSmallInt(t *testing.T) {
	for _, s := range intCases {
		checkSmallInt(t, s)
	}
	checkFastPath(t, "smallInt", func(s string) bool { _, ok := smallInt(s); return ok },
		[]string{"0", "412", "-1", "123456789012345678", "-123456789012345678"},
		[]string{"1234567890123456789", "1.5", "1e3", "", "-", "+1"})
}

func checkSmallInt(t *testing.T, s string) {
	t.Helper()
	n, ok := smallInt(s)
	if !ok {
		return
	}
	want, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n != want {
		t.Fatalf("smallInt(%q) = %d; ParseInt %d, %v", s, n, want, err)
	}
}

// FuzzSmallInt: on any string, smallInt either declines or gives ParseInt's value.
func FuzzSmallInt(f *testing.F) {
	for _, s := range intCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkSmallInt(t, s) })
}

// BenchmarkValue_Int converts the token counts of an answer's usage.
func BenchmarkValue_Int(b *testing.B) {
	vs := []Value{{Kind: Number, Raw: "412"}, {Kind: Number, Raw: "187"}, {Kind: Number, Raw: "0"},
		{Kind: Number, Raw: "1760728905"}}
	var sum int64
	for b.Loop() {
		for _, v := range vs {
			sum += v.Int()
		}
	}
	if sum == 0 {
		b.Fatal("no sum")
	}
}

func TestIndexEnd(t *testing.T) {
	tests := []struct {
		in     string
		at     int
		end    int
		wantOK bool
	}{
		{in: `0,`, end: 1, wantOK: true},
		{in: `"index":12}`, at: 8, end: 10, wantOK: true},
		{in: `123456789`, end: 9, wantOK: true},
		{in: `1234567890`, end: 9, wantOK: true}, // nine digits read; the caller sees a digit next
		{in: `01`, end: 0},
		{in: `00`, end: 0},
		{in: `-1`, end: 0},
		{in: `,`, end: 0},
		{in: ``, end: 0},
		{in: `7`, end: 1, wantOK: true},
		{in: `1.5`, end: 1, wantOK: true}, // the caller checks what follows
	}
	for _, tt := range tests {
		end, ok := IndexEnd(tt.in, tt.at)
		if ok != tt.wantOK || ok && end != tt.end || !ok && end != tt.at {
			t.Errorf("IndexEnd(%q, %d) = %d, %v; want %d, %v", tt.in, tt.at, end, ok, tt.end, tt.wantOK)
		}
	}
}

// BenchmarkValue_ShortStrings reads an array of 512 short strings element by element
// with Value, the step the request parsers take for most members' values.
func BenchmarkValue_ShortStrings(b *testing.B) {
	s := "[" + strings.TrimSuffix(strings.Repeat(`"user",`, 512), ",") + "]"
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		sc := NewScanner(s)
		var v Value
		for n := 0; sc.NextElem(&n); {
			if !sc.Value(&v) {
				b.Fatal("invalid")
			}
		}
	}
}

// TestAppendString_Blocks: strings of a block or more are read from block masks; each
// byte that needs an escape (or is part of a multi-byte character, one across a block's
// end included) is found at every offset of two blocks, as encoding/json writes it.
func TestAppendString_Blocks(t *testing.T) {
	for _, n := range []int{64, 65, 127, 130, 300} {
		for at := 0; at < n; at++ {
			for _, c := range []string{`"`, `\`, "<", "&", "\x00", "\x1f", "\x7f", "\xff", "é", "€", "😀", "\u2028", "\xe2\x80"} {
				s := strings.Repeat("a", at) + c + strings.Repeat(`b"`, max(n-at-len(c), 0)/2) + strings.Repeat("c", at) + c
				want, err := json.Marshal(s)
				if err != nil {
					t.Fatal(err)
				}
				if got := AppendString([]byte("dst:"), s); string(got) != "dst:"+string(want) {
					t.Fatalf("AppendString(%q) = %s, want %s", s, got[4:], want)
				}
				var slogOut strings.Builder
				slog.New(slog.NewJSONHandler(&slogOut, &slog.HandlerOptions{ReplaceAttr: dropTimeLevel})).Info(s)
				wantSlog := strings.TrimSuffix(strings.TrimPrefix(slogOut.String(), `{"msg":`), "}\n")
				if got := AppendSlogString([]byte("dst:"), s); string(got) != "dst:"+wantSlog {
					t.Fatalf("AppendSlogString(%q) = %s, want %s", s, got[4:], wantSlog)
				}
			}
		}
	}
}

// TestAppendInt holds AppendInt's digit-by-digit cases to strconv at and around each
// bound, and the rest to strconv as it is.
func TestAppendInt(t *testing.T) {
	for _, n := range []int{0, 1, 9, 10, 11, 42, 99, 100, 101, 187, 412, 599, 999, 1000, 1001, 1234, 9999,
		10000, 10001, 1760728905, -1, -9, -10, -9999, -10000, math.MaxInt, math.MinInt} {
		got := AppendInt([]byte("x"), n)
		if want := strconv.AppendInt([]byte("x"), int64(n), 10); string(got) != string(want) {
			t.Errorf("AppendInt(%d) = %q, want %q", n, got, want)
		}
	}
}

// FuzzAppendInt holds AppendInt to strconv.AppendInt for any int.
func FuzzAppendInt(f *testing.F) {
	for _, n := range []int{0, 9, 10, 99, 100, 999, 1000, 9999, 10000, -1, math.MaxInt, math.MinInt} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n int) {
		got := AppendInt([]byte("x"), n)
		if want := strconv.AppendInt([]byte("x"), int64(n), 10); string(got) != string(want) {
			t.Fatalf("AppendInt(%d) = %q, want %q", n, got, want)
		}
	})
}

// BenchmarkAppendInt is AppendInt over the numbers a completion and an access line carry
// (an index, token counts, a status, a timestamp), against strconv.AppendInt.
func BenchmarkAppendInt(b *testing.B) {
	ns := []int{0, 7, 42, 200, 412, 187, 599, 1273, 1760728905}
	buf := make([]byte, 0, 128)
	b.Run("jsonx", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf = buf[:0]
			for _, n := range ns {
				buf = AppendInt(buf, n)
			}
		}
	})
	b.Run("strconv", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf = buf[:0]
			for _, n := range ns {
				buf = strconv.AppendInt(buf, int64(n), 10)
			}
		}
	})
}
