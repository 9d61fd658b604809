package ledger

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
)

// sqliteWriter writes the writer's batches on SQLite under database/sql, on the
// driver's own connection (sql.Conn.Raw): one connection kept for the writer, its
// statements prepared on it once, executed with driver arguments the writer fills in
// place. database/sql would otherwise check, convert and copy every value of every row
// and wrap each prepared statement for its transaction at every chunk: about a tenth of
// the writer's CPU (docs/ledger.md, "The writer's cost"). Not safe for concurrent use:
// the store's writer goroutine is its only user.
type sqliteWriter struct {
	// conn is the writer's connection (nil until the first write, and after it broke);
	// prep its prepared statements.
	conn *sql.Conn
	prep map[stmtKey]driver.Stmt
	// args are a statement's arguments, reused.
	args []driver.NamedValue
}

// sqliteConn is what the writer needs of the driver's connection.
type sqliteConn interface {
	driver.ConnPrepareContext
	driver.ConnBeginTx
}

// write runs fn in a transaction on the writer's connection; fn executes statements
// with exec, whose texts are text's. A connection the driver reports broken is let go, and the next write takes
// another.
func (w *sqliteWriter) write(ctx context.Context, db *sql.DB, text func(table string, n int) string, fn func(exec execFunc) error) error {
	if w.conn == nil {
		c, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		w.conn, w.prep = c, map[stmtKey]driver.Stmt{}
	}
	err := w.conn.Raw(func(dc any) error {
		c, ok := dc.(sqliteConn)
		if !ok {
			return fmt.Errorf("ledger: the sqlite driver's connection (%T) cannot prepare statements in a transaction", dc)
		}
		tx, err := c.BeginTx(ctx, driver.TxOptions{})
		if err != nil {
			return err
		}
		if err := fn(func(ctx context.Context, table string, n int, args []any) error {
			return w.exec(ctx, c, stmtKey{table, n}, text, args)
		}); err != nil {
			_ = tx.Rollback()
			return err
		}
		return tx.Commit()
	})
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) {
		w.release()
	}
	return err
}

// exec runs the statement key, prepared on c once, with args.
func (w *sqliteWriter) exec(ctx context.Context, c sqliteConn, key stmtKey, text func(table string, n int) string, args []any) error {
	st := w.prep[key]
	if st == nil {
		var err error
		if st, err = c.PrepareContext(ctx, text(key.table, key.n)); err != nil {
			return err
		}
		w.prep[key] = st
	}
	ex, ok := st.(driver.StmtExecContext)
	if !ok {
		return fmt.Errorf("ledger: the sqlite driver's statement (%T) cannot execute with a context", st)
	}
	nv := w.args[:0]
	for i, v := range args {
		if n, ok := v.(int); ok { // the driver binds int64, not int
			v = int64(n)
		}
		nv = append(nv, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	w.args = nv
	defer clear(nv) // the records' strings are not kept
	_, err := ex.ExecContext(ctx, nv)
	return err
}

// release closes the writer's statements and gives its connection back to the pool.
func (w *sqliteWriter) release() {
	if w.conn == nil {
		return
	}
	_ = w.conn.Raw(func(any) error {
		for _, st := range w.prep {
			_ = st.Close()
		}
		return nil
	})
	_ = w.conn.Close()
	w.conn, w.prep = nil, nil
}
