package proxy

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// readNames is every name readName knows, as it returns them.
var readNames = []string{
	headerAuthorization, headerAPIKey, headerRequestID, headerAnthropicVersion, headerAnthropicBeta,
	"Expect", "Connection", "Upgrade", "Origin", "Sec-Websocket-Version", "Sec-Websocket-Key",
	"Sec-Websocket-Extensions", "Sec-Websocket-Protocol", "Traceparent", "Tracestate",
	"Cache-Control", headerCache, "X-Csrf-Token", "X-Forwarded-Proto",
}

// TestRequestHeaderNamesCanonical: the names readName returns are canonical (peekHeader's
// and Peek's callers write them so), each is found from its lower, upper and mixed case,
// and names that differ from one by a byte, or are another header's, are not.
func TestRequestHeaderNamesCanonical(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	for _, name := range readNames {
		if got := string(fasthttp.AppendNormalizedHeaderKey(nil, name)); got != name {
			t.Errorf("%q is not canonical: fasthttp stores it as %q", name, got)
		}
		for _, c := range headerCasings {
			if got := readName([]byte(c.of(name))); got != name {
				t.Errorf("readName(%q) = %q, want %q", c.of(name), got, name)
			}
		}
		for i := range len(name) { // one byte off: no name
			for _, b := range []byte{'\r', '_', '.', name[i] + 1} {
				if letter := name[i]|0x20 >= 'a' && name[i]|0x20 <= 'z'; b == name[i] || letter && b|0x20 == name[i]|0x20 {
					continue
				}
				odd := []byte(name)
				odd[i] = b
				if got := readName(odd); got != "" {
					t.Errorf("readName(%q) = %q, want none", odd, got)
				}
			}
		}
	}
	for _, name := range []string{"", "Host", "Content-Type", "Content-Length", "User-Agent", "Transfer-Encoding",
		"Accept", "X-Stainless-Os", "Anthropic-Betas", "X-Request-I", "Sec-Websocket-Accept", "Cookie"} {
		if got := readName([]byte(name)); got != "" {
			t.Errorf("readName(%q) = %q, want none", name, got)
		}
	}
}

// TestReadNames_Source: every request header name the proxy's and the console's code
// reads by a literal or a constant name (Peek, PeekAll, PeekCanonical, PeekBytes,
// peekHeader) is one readName knows, so that foldHeaderNames folds it: a new read of a
// name not on the list fails here instead of missing a lower-case client's header.
// Response headers' and argument reads (Response.Header, QueryArgs, PostArgs, args) are
// not request header reads; a name taken from configuration is read with peekAnyCase.
func TestReadNames_Source(t *testing.T) {
	t.Parallel() // reads the source files only (#54)
	consts := map[string]string{}
	type read struct{ pos, expr string }
	var reads []read
	fset := token.NewFileSet()
	for _, dir := range []string{".", "../console"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.ValueSpec:
					for i, id := range n.Names {
						if i < len(n.Values) {
							if lit, ok := n.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
								consts[id.Name], _ = strconv.Unquote(lit.Value)
							}
						}
					}
				case *ast.CallExpr:
					var arg ast.Expr
					switch fn := n.Fun.(type) {
					case *ast.SelectorExpr:
						switch fn.Sel.Name {
						case "Peek", "PeekAll", "PeekCanonical", "PeekBytes":
							recv := exprText(fn.X)
							if strings.Contains(recv, "Response") || strings.Contains(recv, "Args") || strings.HasPrefix(recv, "args") || len(n.Args) != 1 {
								return true
							}
							arg = n.Args[0]
						}
					case *ast.Ident:
						if fn.Name == "peekHeader" && len(n.Args) == 2 {
							arg = n.Args[1]
						}
					}
					if arg != nil {
						reads = append(reads, read{fset.Position(n.Pos()).String(), exprText(arg)})
					}
				}
				return true
			})
		}
	}
	if len(reads) < 10 {
		t.Fatalf("found %d header reads: the scan is broken", len(reads))
	}
	for _, r := range reads {
		name, ok := "", false
		switch {
		case strings.HasPrefix(r.expr, `"`):
			name, _ = strconv.Unquote(r.expr)
			ok = true
		case consts[r.expr] != "":
			name, ok = consts[r.expr], true
		case r.expr == "key" && strings.Contains(r.pos, "tracing.go"), r.expr == "k" && strings.Contains(r.pos, "websocket.go"),
			strings.Contains(r.pos, "request_header.go"):
			continue // requestHeaders.Get's and upgradeRequest's names, each listed with the code; peekHeader
		}
		if !ok {
			t.Errorf("%s: a request header read by %s, neither a literal nor a constant: make it one readName knows, or use peekAnyCase", r.pos, r.expr)
			continue
		}
		if got := readName([]byte(name)); got != name {
			t.Errorf("%s: reads request header %q, which readName does not know (readName gives %q): foldHeaderNames leaves it as the client wrote it", r.pos, name, got)
		}
	}
}

// exprText is an expression's source, for the few forms the scan above meets.
func exprText(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.BasicLit:
		return e.Value
	case *ast.SelectorExpr:
		return exprText(e.X) + "." + e.Sel.Name
	case *ast.CallExpr:
		return exprText(e.Fun) + "()"
	case *ast.UnaryExpr:
		return e.Op.String() + exprText(e.X)
	case *ast.StarExpr:
		return "*" + exprText(e.X)
	case *ast.ParenExpr:
		return exprText(e.X)
	case *ast.IndexExpr:
		return exprText(e.X) + "[]"
	}
	return "?"
}

// parseHead parses raw as the server does: names not normalized, then foldHeaderNames.
func parseHead(t *testing.T, raw string) *fasthttp.RequestHeader {
	t.Helper()
	var h fasthttp.RequestHeader
	h.DisableNormalizing()
	if err := h.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
		t.Fatal(err)
	}
	foldHeaderNames(&h)
	return &h
}

// TestFoldHeaderNames: after the server's parse and foldHeaderNames, a header the client
// wrote in any case is found by its canonical name, with the value a normalizing parse's
// Peek returns; a name readName does not know keeps the client's case (and is found by
// peekAnyCase); a traceparent reaches the trace propagator's lower-case Get.
func TestFoldHeaderNames(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	for _, name := range readNames {
		for _, c := range headerCasings {
			sent := c.of(name)
			raw := "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nX-Stainless-OS: Linux\r\n" + sent + ": v-" + c.name + "\r\nContent-Length: 0\r\n\r\n"
			h := parseHead(t, raw)
			var normal fasthttp.Request
			if err := normal.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
				t.Fatal(err)
			}
			want := string(normal.Header.Peek(name))
			if got := string(peekHeader(h, name)); got != want || (got != "v-"+c.name && name != "Connection") {
				t.Errorf("%q: peekHeader(%s) = %q, normalizing Peek %q", sent, name, got, want)
			}
			if got := string(h.Peek("X-Stainless-OS")); got != "Linux" {
				t.Errorf("%q: X-Stainless-OS, not a read name, is not kept as sent: Peek = %q", sent, got)
			}
			if got := string(peekAnyCase(h, "x-stainless-os")); got != "Linux" {
				t.Errorf("%q: peekAnyCase(x-stainless-os) = %q", sent, got)
			}
		}
	}
	h := parseHead(t, "GET / HTTP/1.1\r\nhost: gw\r\nTRACEPARENT: 00-a-b-01\r\ntracestate: k=v\r\n\r\n")
	r := requestHeaders{h}
	if got := []string{r.Get("traceparent"), r.Get("tracestate")}; got[0] != "00-a-b-01" || got[1] != "k=v" {
		t.Errorf("the propagator's Get: %q", got)
	}
	if got := string(peekAnyCase(h, "X-Absent")); got != "" {
		t.Errorf("peekAnyCase of an absent name: %q", got)
	}
}

// TestHasToken: comma-separated tokens in any case, with spaces around them.
func TestHasToken(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{"keep-alive", true}, {"Keep-Alive", true}, {"Upgrade, keep-alive", true}, {" KEEP-ALIVE ,x", true},
		{"", false}, {"close", false}, {"keep-alives", false}, {"keep-alive-x, y", false},
	} {
		if got := hasToken([]byte(tc.v), "keep-alive"); got != tc.want {
			t.Errorf("hasToken(%q) = %v, want %v", tc.v, got, tc.want)
		}
	}
}
