package ledger

import (
	"strings"
	"sync"
)

// writeChunks are the row counts of the writer's statements, largest first: a batch is
// written as statements of these sizes, so that a few prepared statements (SQLite) or
// statements in pgx's cache (PostgreSQL) serve every batch, parsed and planned once.
// 256 rows of 26 columns bind 6,656 parameters, under SQLite's 32,766.
var writeChunks = [...]int{256, 64, 16, 4, 1}

// eachChunk calls fn with the bounds [i, j) of n rows cut in writeChunks' sizes, until
// fn fails.
func eachChunk(n int, fn func(i, j int) error) error {
	i := 0
	for _, size := range writeChunks {
		for ; n-i >= size; i += size {
			if err := fn(i, i+size); err != nil {
				return err
			}
		}
	}
	return nil
}

// stmtKey names a writer's statement: n rows into table.
type stmtKey struct {
	table string
	n     int
}

// stmts are the texts of the writer's statements, built once (SQLite prepares them on
// the writer's connection: sqlitewrite.go). Safe for concurrent use.
type stmts struct {
	mu   sync.Mutex
	text map[stmtKey]string
}

// requestsTable is the raw records' table.
const requestsTable = "ledger_requests"

// sql is the statement writing n rows into table: the records' INSERT or a rollup's
// upsert, with d's placeholders.
func (c *stmts) sql(d *dialect, table string, n int) string {
	k := stmtKey{table, n}
	c.mu.Lock()
	defer c.mu.Unlock()
	q, ok := c.text[k]
	if !ok {
		switch table {
		case requestsTable:
			q = d.bind(insertSQL(n))
		case keyRangesTable:
			q = keyRangesSQL(n)
		case batchesTable:
			q = batchSQL()
		default:
			q = d.bind(upsertSQL(table, n))
		}
		if !d.dollar {
			// SQLite: a row that fails fails the transaction (which the writer rolls back
			// anyway), not the statement alone, so that SQLite keeps no statement journal
			// of the pages a multi-row statement changes.
			q = "INSERT OR ROLLBACK" + strings.TrimPrefix(q, "INSERT")
		}
		if c.text == nil {
			c.text = map[stmtKey]string{}
		}
		c.text[k] = q
	}
	return q
}
