package ledger

import (
	"context"
	"database/sql"
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

// stmts are the writer's statements: their texts (built once) and, on SQLite, their
// prepared statements (database/sql prepares each on a connection once, then reuses
// it). Safe for concurrent use.
type stmts struct {
	mu   sync.Mutex
	text map[stmtKey]string
	prep map[stmtKey]*sql.Stmt
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
		if table == requestsTable {
			q = d.bind(insertSQL(n))
		} else {
			q = d.bind(upsertSQL(table, n))
		}
		if c.text == nil {
			c.text = map[stmtKey]string{}
		}
		c.text[k] = q
	}
	return q
}

// exec runs the statement writing n rows into table in tx, prepared once on db.
func (c *stmts) exec(ctx context.Context, db *sql.DB, tx *sql.Tx, d *dialect, table string, n int, args []any) error {
	k := stmtKey{table, n}
	c.mu.Lock()
	st := c.prep[k]
	c.mu.Unlock()
	if st == nil {
		var err error
		if st, err = db.PrepareContext(ctx, c.sql(d, table, n)); err != nil {
			return err
		}
		c.mu.Lock()
		if prev := c.prep[k]; prev != nil { // prepared meanwhile: keep one
			_ = st.Close()
			st = prev
		} else {
			if c.prep == nil {
				c.prep = map[stmtKey]*sql.Stmt{}
			}
			c.prep[k] = st
		}
		c.mu.Unlock()
	}
	_, err := tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	return err
}

// close closes the prepared statements.
func (c *stmts) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, st := range c.prep {
		_ = st.Close()
		delete(c.prep, k)
	}
}
