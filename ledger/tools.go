package ledger

import (
	"strconv"
	"time"

	"github.com/agate-gateway/agate/internal/jsonx"
)

// MaxTools bounds the server tools a record itemizes (Record.Tools); the calls of the
// others are counted in Record.ToolsOmitted.
const MaxTools = 16

// ToolUse is what one server-side tool did in a request's tool loop, summed over its
// calls. Its strings are configured names only (never a call's arguments or result).
type ToolUse struct {
	// Name is the model-facing tool name (the configured tool, tools.Definition.Name)
	// and Source its configured source.
	Name, Source string
	// Calls counts the tool's calls, Errors those that failed (an error result to the
	// model: the tool failed, timed out, was refused its arguments or over the per-turn
	// limit).
	Calls, Errors int
	// Duration sums the calls' times.
	Duration time.Duration
}

// appendTools appends as a JSON array of objects with the members name, source,
// count, errors and duration_ms: the stored form of Record.Tools, and the admin API's.
func appendTools(b []byte, ts []ToolUse) []byte {
	b = append(b, '[')
	for i := range ts {
		u := &ts[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonx.AppendString(append(b, `{"name":`...), u.Name)
		b = jsonx.AppendString(append(b, `,"source":`...), u.Source)
		b = strconv.AppendInt(append(b, `,"count":`...), int64(u.Calls), 10)
		b = strconv.AppendInt(append(b, `,"errors":`...), int64(u.Errors), 10)
		b = strconv.AppendInt(append(b, `,"duration_ms":`...), u.Duration.Milliseconds(), 10)
		b = append(b, '}')
	}
	return append(b, ']')
}

// toolsText is the stored form of ts: NULL (nil) when there are none.
func toolsText(ts []ToolUse) any {
	if len(ts) == 0 {
		return nil
	}
	return string(appendTools(make([]byte, 0, 96*len(ts)), ts))
}

// boundTools keeps r's first MaxTools tools and adds the calls of the others to
// ToolsOmitted.
func boundTools(r *Record) {
	if len(r.Tools) <= MaxTools {
		return
	}
	for _, u := range r.Tools[MaxTools:] {
		r.ToolsOmitted += u.Calls
	}
	r.Tools = r.Tools[:MaxTools:MaxTools]
}

// v6Columns are the raw records' columns schema version 6 adds, and their definitions
// (the same on both databases).
var v6Columns = [...]struct{ name, def string }{
	{"tools", "TEXT"}, // NULL: no server tool ran
	{"tools_omitted", "INTEGER NOT NULL DEFAULT 0"},
}

// schemaV6 is version 6 (both databases): the record's server tool summary. On
// PostgreSQL a column added to the partitioned table is added to every partition.
func schemaV6() string {
	s := ""
	for _, c := range v6Columns {
		s += "ALTER TABLE ledger_requests ADD COLUMN " + c.name + " " + c.def + ";\n"
	}
	return s
}
