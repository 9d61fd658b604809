package ledger

import (
	"strconv"
	"strings"
	"time"

	"github.com/agate-gateway/agate/internal/jsonx"
)

// MaxAttempts bounds the attempts a record keeps (Record.Attempts); the rest are counted
// in Record.AttemptsOmitted.
const MaxAttempts = 8

// Attempt is one upstream attempt of a request, as the ledger keeps it. Its strings are
// bounded by whoever fills them: configured names and labels, and an error type the
// proxy clips.
type Attempt struct {
	// Backend is the configured backend tried, Deployment its deployment label
	// ("<backend>/<upstream model>") and Model the configured model whose route it was
	// (the requested one, or a fallback).
	Backend, Deployment, Model string
	// Status is the upstream's HTTP status (200 for an attempt that answered), 0 when it
	// gave none (a connection failure, a timeout).
	Status int
	// ErrorType is the failure's type ("" for an attempt that answered).
	ErrorType string
	// Duration is the attempt's time, from its start to its end. The proxy times it from
	// the sending of its upstream request (the request body's encoding before it is left
	// out), and an attempt that failed before it was sent has 0.
	Duration time.Duration
	// Continued is set for an attempt that continued a stream another one broke.
	Continued bool
	// PromptTokens and CompletionTokens are what the attempt was charged (reported by its
	// upstream, or estimated), 0 when it failed before any usage: the record's totals
	// are the sum of its attempts' (of all of them, the omitted ones too).
	PromptTokens, CompletionTokens int64
}

// appendAttempts appends as a JSON array of objects with the members backend,
// deployment, model, status, error_type, duration_ms, continued, prompt_tokens and
// completion_tokens (the last two from schema version 6): the stored form of
// Record.Attempts, and the admin API's.
func appendAttempts(b []byte, as []Attempt) []byte {
	b = append(b, '[')
	for i := range as {
		a := &as[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonx.AppendString(append(b, `{"backend":`...), a.Backend)
		b = jsonx.AppendString(append(b, `,"deployment":`...), a.Deployment)
		b = jsonx.AppendString(append(b, `,"model":`...), a.Model)
		b = strconv.AppendInt(append(b, `,"status":`...), int64(a.Status), 10)
		b = jsonx.AppendString(append(b, `,"error_type":`...), a.ErrorType)
		b = strconv.AppendInt(append(b, `,"duration_ms":`...), a.Duration.Milliseconds(), 10)
		b = strconv.AppendBool(append(b, `,"continued":`...), a.Continued)
		b = strconv.AppendInt(append(b, `,"prompt_tokens":`...), a.PromptTokens, 10)
		b = strconv.AppendInt(append(b, `,"completion_tokens":`...), a.CompletionTokens, 10)
		b = append(b, '}')
	}
	return append(b, ']')
}

// attemptsText is the stored form of as: NULL (nil) when there are none.
func attemptsText(as []Attempt) any {
	if len(as) == 0 {
		return nil
	}
	return string(appendAttempts(make([]byte, 0, 160*len(as)), as))
}

// attemptList returns r's attempts: Attempts, or, for a RouteAttempt, the one it stands
// for, made in one.
func (r *Record) attemptList(one *[1]Attempt) []Attempt {
	if len(r.Attempts) > 0 || !r.RouteAttempt {
		return r.Attempts
	}
	one[0] = Attempt{Backend: r.Backend, Deployment: r.Deployment, Model: r.Served, Status: r.Status, ErrorType: r.ErrorType,
		Duration: r.RouteAttemptDuration, PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens}
	return one[:]
}

// boundAttempts keeps r's first MaxAttempts attempts and counts the others.
func boundAttempts(r *Record) {
	if n := len(r.Attempts); n > MaxAttempts {
		r.AttemptsOmitted += n - MaxAttempts
		r.Attempts = r.Attempts[:MaxAttempts:MaxAttempts]
	}
}

// v5Columns are the raw records' columns schema version 5 adds, and their definitions.
var v5Columns = [...]struct{ name, def string }{
	{"deployment", "TEXT NOT NULL DEFAULT ''"},
	{"trace_id", "TEXT NOT NULL DEFAULT ''"},
	{"continued_from", "TEXT NOT NULL DEFAULT ''"},
	{"attempts", "TEXT"}, // NULL: none
	{"attempts_omitted", "INTEGER NOT NULL DEFAULT 0"},
}

// rollupKeyColumns are a rollup's key from schema version 5 on (rollupDims).
var rollupKeyColumns = strings.Join(rollupDims[:], ", ")

// schemaV5SQLite is version 5 on SQLite: the record's new columns, and each rollup
// rebuilt with deployment in its key (SQLite cannot change a primary key in place);
// existing rollup rows get deployment "".
func schemaV5SQLite() string {
	var b strings.Builder
	for _, c := range v5Columns {
		b.WriteString("ALTER TABLE ledger_requests ADD COLUMN " + c.name + " " + c.def + ";\n")
	}
	cols := "bucket, key_name, team, model, status, " + strings.Join(rollupColumns[:], ", ")
	for _, t := range rollupTables {
		ddl := rollupDDL(t.name+"_v5", "INTEGER", "REAL")
		ddl = strings.Replace(ddl, "  PRIMARY KEY (bucket, key_name, team, model, status)",
			"  deployment TEXT NOT NULL DEFAULT '',\n  PRIMARY KEY ("+rollupKeyColumns+")", 1)
		b.WriteString(ddl)
		b.WriteString("INSERT INTO " + t.name + "_v5 (" + cols + ") SELECT " + cols + " FROM " + t.name + ";\n")
		b.WriteString("DROP TABLE " + t.name + ";\n")
		b.WriteString("ALTER TABLE " + t.name + "_v5 RENAME TO " + t.name + ";\n")
	}
	return b.String()
}

// schemaV5Postgres is version 5 on PostgreSQL: the record's new columns (added to every
// partition), and deployment added to each rollup's primary key.
func schemaV5Postgres() string {
	var b strings.Builder
	for _, c := range v5Columns {
		b.WriteString("ALTER TABLE ledger_requests ADD COLUMN " + c.name + " " + c.def + ";\n")
	}
	for _, t := range rollupTables {
		b.WriteString("ALTER TABLE " + t.name + " ADD COLUMN deployment TEXT NOT NULL DEFAULT '';\n")
		b.WriteString("ALTER TABLE " + t.name + " DROP CONSTRAINT " + t.name + "_pkey, ADD PRIMARY KEY (" + rollupKeyColumns + ");\n")
	}
	return b.String()
}
