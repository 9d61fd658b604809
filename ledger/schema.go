package ledger

// dialect is what differs between the two databases.
type dialect struct {
	name string
	// migrations are the schema versions in order: migrations[i] makes version i+1.
	migrations []string
	// rowRef names a row for the batched deletes of rollups ("rowid", "ctid").
	rowRef string
	// dollar is set when placeholders are $1, $2 (PostgreSQL), not ?.
	dollar bool
}

// columns are the raw record's columns in insert order (Record's fields, see insertArgs).
var columns = [...]string{"ts_us", "request_id", "key_name", "team", "api", "model", "served_model", "backend",
	"stream", "status", "error_type", "prompt_tokens", "cached_read_tokens", "cache_write_tokens",
	"completion_tokens", "reasoning_tokens", "cost_usd", "usage_estimated", "total_ms", "first_token_ms",
	"upstream_ms", "tool_calls", "fallbacks", "cache_hit", "prompt", "completion",
	"deployment", "trace_id", "continued_from", "attempts", "attempts_omitted", // version 5: v5Columns
	"tools", "tools_omitted"} // version 6: v6Columns

// rollupTables are the rollups, finest first, with their bucket width in seconds.
var rollupTables = [...]struct {
	name  string
	width int64
}{{"ledger_rollup_minute", 60}, {"ledger_rollup_hour", 3600}, {"ledger_rollup_day", 86400}}

// rollupDims are a rollup's key: its bucket and dimensions, in the upsert's order
// (rollupKey's fields; upsertRollups' arguments).
var rollupDims = [...]string{"bucket", "key_name", "team", "model", "status", "deployment"}

// rollupColumns are a rollup's columns after its key (bucket, key_name, team, model,
// status and, from version 5, deployment: rollupKeyColumns): the sums.
var rollupColumns = [...]string{"requests", "errors", "prompt_tokens", "cached_read_tokens", "cache_write_tokens",
	"completion_tokens", "reasoning_tokens", "cost_usd", "total_ms"}

// spendDDL are the token and cost columns of the records and the rollups.
func spendDDL(bigint, double string) string {
	return `  prompt_tokens ` + bigint + ` NOT NULL,
  cached_read_tokens ` + bigint + ` NOT NULL,
  cache_write_tokens ` + bigint + ` NOT NULL,
  completion_tokens ` + bigint + ` NOT NULL,
  reasoning_tokens ` + bigint + ` NOT NULL,
  cost_usd ` + double + ` NOT NULL,
`
}

// rollupDDL is a rollup table's definition (both databases).
func rollupDDL(table, bigint, double string) string {
	return `CREATE TABLE ` + table + ` (
  bucket ` + bigint + ` NOT NULL,
  key_name TEXT NOT NULL,
  team TEXT NOT NULL,
  model TEXT NOT NULL,
  status INTEGER NOT NULL,
  requests ` + bigint + ` NOT NULL,
  errors ` + bigint + ` NOT NULL,
` + spendDDL(bigint, double) + `  total_ms ` + bigint + ` NOT NULL,
  PRIMARY KEY (bucket, key_name, team, model, status)
);
`
}

// requestsDDL is the raw records' table (both databases): id is the database's
// auto-increment key.
func requestsDDL(id, bigint, boolean, double string) string {
	return `CREATE TABLE ledger_requests (
  id ` + id + `,
  ts_us ` + bigint + ` NOT NULL,
  request_id TEXT NOT NULL,
  key_name TEXT NOT NULL,
  team TEXT NOT NULL,
  api TEXT NOT NULL,
  model TEXT NOT NULL,
  served_model TEXT NOT NULL,
  backend TEXT NOT NULL,
  stream ` + boolean + ` NOT NULL,
  status INTEGER NOT NULL,
  error_type TEXT NOT NULL,
` + spendDDL(bigint, double) + `  usage_estimated ` + boolean + ` NOT NULL,
  total_ms INTEGER NOT NULL,
  first_token_ms INTEGER NOT NULL,
  upstream_ms INTEGER NOT NULL,
  tool_calls INTEGER NOT NULL,
  fallbacks INTEGER NOT NULL,
  cache_hit ` + boolean + ` NOT NULL,
  prompt TEXT,
  completion TEXT
);
CREATE INDEX ledger_requests_ts ON ledger_requests (ts_us);
CREATE INDEX ledger_requests_key ON ledger_requests (key_name, id);
`
}

// schemaV1 is version 1 of the schema for a database's type names.
func schemaV1(id, bigint, boolean, double string) string {
	s := requestsDDL(id, bigint, boolean, double)
	for _, t := range rollupTables {
		s += rollupDDL(t.name, bigint, double)
	}
	return s
}

var sqliteDialect = dialect{
	name: "sqlite",
	migrations: []string{schemaV1("INTEGER PRIMARY KEY AUTOINCREMENT", "INTEGER", "INTEGER", "REAL"),
		keysDDL("INTEGER PRIMARY KEY AUTOINCREMENT", "INTEGER", "INTEGER", "REAL"),
		teamsDDL("INTEGER", "REAL"),
		"SELECT 1; -- version 4 partitions the raw records on PostgreSQL; SQLite has no partitions",
		schemaV5SQLite(), schemaV6(), schemaV7SQLite(), schemaV8SQLite(), schemaV9SQLite()},
	rowRef: "rowid",
}

var postgresDialect = dialect{
	name: "postgres",
	migrations: []string{schemaV1("BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "BIGINT", "BOOLEAN", "DOUBLE PRECISION"),
		keysDDL("BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "BIGINT", "BOOLEAN", "DOUBLE PRECISION"),
		teamsDDL("BIGINT", "DOUBLE PRECISION"),
		partitionedRequestsDDL(),
		schemaV5Postgres(), schemaV6(),
		"SELECT 1; -- version 7 replaces the raw records' key index on SQLite (keyranges.go); PostgreSQL keeps it",
		"SELECT 1; -- version 8 stores the raw records a batch to a row on SQLite (batches.go); PostgreSQL keeps a row a record",
		"SELECT 1; -- version 9 stores SQLite's batches in fewer bytes (batchv9.go); PostgreSQL keeps a row a record"},
	rowRef: "ctid",
	dollar: true,
}

// bind rewrites q's ? placeholders for d.
func (d *dialect) bind(q string) string {
	if !d.dollar {
		return q
	}
	b := make([]byte, 0, len(q)+16)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b = append(b, '$')
			b = appendInt(b, n)
			continue
		}
		b = append(b, q[i])
	}
	return string(b)
}

func appendInt(b []byte, n int) []byte {
	if n >= 10 {
		b = appendInt(b, n/10)
	}
	return append(b, byte('0'+n%10))
}
