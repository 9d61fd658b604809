package tools

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCanonicalJSON(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr bool
	}{
		{name: "empty object", in: ` { } `, want: `{}`},
		{name: "sorted keys", in: `{"b":2, "a":1}`, want: `{"a":1,"b":2}`},
		{name: "nested objects sorted", in: `{"z":{"y":1,"x":[{"b":1,"a":2}]},"a":null}`, want: `{"a":null,"z":{"x":[{"a":2,"b":1}],"y":1}}`},
		{name: "whitespace removed", in: "{\n\t\"a\" : [ 1 , 2 ] ,\r\n \"b\":true }", want: `{"a":[1,2],"b":true}`},
		{name: "numbers kept as written", in: `{"a":1.0,"b":1e3,"c":-0,"d":1E+2}`, want: `{"a":1.0,"b":1e3,"c":-0,"d":1E+2}`},
		{name: "escapes normalised", in: `{"\u0061":"\u00e9\/\"\n\u0001"}`, want: "{\"a\":\"\u00e9/\\\"\\n\\u0001\"}"},
		{name: "surrogate pair decoded", in: `"\ud83d\ude00"`, want: "\"\U0001F600\""},
		{name: "lone surrogate is replacement char", in: `"\ud83d"`, want: "\"\uFFFD\""},
		{name: "duplicate key keeps last", in: `{"a":1,"b":0,"a":2}`, want: `{"a":2,"b":0}`},
		{name: "keys sorted by bytes", in: `{"é":1,"z":2,"A":3}`, want: `{"A":3,"z":2,"é":1}`},
		{name: "top-level scalar", in: ` "x" `, want: `"x"`},
		{name: "not JSON", in: `{"a":`, wantErr: true},
		{name: "trailing garbage", in: `{} x`, wantErr: true},
		{name: "trailing comma", in: `{"a":1,}`, wantErr: true},
		{name: "leading zero", in: `[01]`, wantErr: true},
		{name: "bad literal", in: `[tru]`, wantErr: true},
		{name: "raw control char", in: "\"a\x01\"", wantErr: true},
		{name: "empty", in: ``, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := appendCanonicalJSON(nil, []byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("appendCanonicalJSON(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("appendCanonicalJSON(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestCacheKey_EqualForEqualArguments(t *testing.T) {
	tests := []struct {
		name      string
		a, b      string
		wantEqual bool
	}{
		{name: "key order", a: `{"a":1, "b":2}`, b: `{"b":2,"a":1}`, wantEqual: true},
		{name: "whitespace", a: `{"a":[1,2]}`, b: "{ \"a\" :\n[1, 2] }", wantEqual: true},
		{name: "escaped key", a: `{"a":"x"}`, b: `{"\u0061":"x"}`, wantEqual: true},
		{name: "different value", a: `{"a":1}`, b: `{"a":2}`, wantEqual: false},
		{name: "number spelling matters", a: `{"a":1}`, b: `{"a":1.0}`, wantEqual: false},
		{name: "array order matters", a: `[1,2]`, b: `[2,1]`, wantEqual: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ka, err := cacheKey("", "tool", []byte(tt.a))
			if err != nil {
				t.Fatal(err)
			}
			kb, err := cacheKey("", "tool", []byte(tt.b))
			if err != nil {
				t.Fatal(err)
			}
			if got := ka == kb; got != tt.wantEqual {
				t.Errorf("keys equal = %v, want %v (%q vs %q)", got, tt.wantEqual, ka, kb)
			}
		})
	}
	k1, _ := cacheKey("", "tool_a", []byte(`{}`))
	k2, _ := cacheKey("", "tool_b", []byte(`{}`))
	if k1 == k2 {
		t.Errorf("different tools share key %q", k1)
	}
}

// FuzzCanonicalKey checks that canonicalisation never panics, accepts exactly the
// documents encoding/json accepts, is idempotent, preserves the value, and maps a re-encoded
// (differently formatted) document to the same key.
func FuzzCanonicalKey(f *testing.F) {
	for _, s := range []string{
		`{"a":1, "b":2}`, `{"b":2,"a":1}`, `[1,2,{"x":null}]`, `"\ud83d\ude00"`, `{"a":1,"a":2}`,
		`{"q":"<b>&amp;</b>","n":-1.5e-3,"t":true,"f":false}`, "\"\xff\"", `{"\u00e9":"\u2028"}`,
		` 12 `, `{"a":[]}`, `{"a":{}}`, `[`,
	} {
		f.Add([]byte(s))
	}
	decode := func(b []byte) (any, error) {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		err := d.Decode(&v)
		return v, err
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		key, err := appendCanonicalJSON(nil, in)
		if valid := json.Valid(in); valid != (err == nil) {
			t.Fatalf("json.Valid = %v but canonical error = %v for %q", valid, err, in)
		}
		if err != nil {
			return
		}
		again, err := appendCanonicalJSON(nil, key)
		if err != nil || !bytes.Equal(again, key) {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", in, key, again, err)
		}
		want, err := decode(in)
		if err != nil {
			t.Fatalf("decoding input: %v", err)
		}
		got, err := decode(key)
		if err != nil {
			t.Fatalf("decoding key %q: %v", key, err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("value changed: %q -> %q", in, key)
		}
		reencoded, err := json.MarshalIndent(want, "", " ")
		if err != nil {
			t.Fatalf("re-encoding: %v", err)
		}
		key2, err := appendCanonicalJSON(nil, reencoded)
		if err != nil || !bytes.Equal(key, key2) {
			t.Fatalf("equal values, different keys: %q -> %q, %q -> %q (%v)", in, key, reencoded, key2, err)
		}
	})
}

func BenchmarkCanonicalKey(b *testing.B) {
	args := []byte(`{"query": "weather in Paris", "units": "metric", "days": 3, "include": ["wind", "rain"], "options": {"lang": "fr", "detail": true}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(args)))
	for b.Loop() {
		if _, err := cacheKey("", "weather__forecast", args); err != nil {
			b.Fatal(err)
		}
	}
}
