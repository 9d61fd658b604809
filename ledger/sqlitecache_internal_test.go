package ledger

import (
	"context"
	"encoding/binary"
	"strconv"
	"strings"
	"testing"
	"time"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// TestSQLiteWriter_CacheBounded: the writer's connection keeps at most writerCacheKiB of
// pages (writerPragmas), not SQLite's default 2,000 KiB, which it filled with the pages of
// batch rows it wrote and never reads again (docs/ledger.md, "GC and memory, ninth
// session"): after 16,000 records its page cache holds under 1.5 times the bound (629
// KiB measured; 1,900 KiB with SQLite's default, 2.2 MB after 60,000 records).
func TestSQLiteWriter_CacheBounded(t *testing.T) {
	if !strings.Contains(writerPragmas, "cache_size=-"+strconv.Itoa(writerCacheKiB)+";") {
		t.Fatalf("writerPragmas %q do not set writerCacheKiB", writerPragmas)
	}
	ctx := context.Background()
	l, err := Open(ctx, Options{Type: "sqlite", DSN: FreshSQLite(t), FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	at := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	for i := range 16000 {
		r := Record{Time: at.Add(time.Duration(i) * time.Millisecond), RequestID: "req_" + time.Duration(i).String(),
			Key: "bench", API: "chat", Model: "claude-bench", Served: "claude-bench", Backend: "anth",
			Deployment: "anth/claude-bench", Status: 200, PromptTokens: int64(i % 1000), CompletionTokens: 12,
			Attempts: []Attempt{{Backend: "anth", Deployment: "anth/claude-bench", Model: "claude-bench", Status: 200}}}
		if !l.Add(r) {
			t.Fatal("a record was dropped")
		}
		if i%1000 == 999 {
			if err := l.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The writer is idle once Flush returned (its ack orders its writes before these reads).
	w := &l.st.w
	if w.db == 0 {
		t.Fatal("the writer's connection is not open")
	}
	tls := libc.NewTLS()
	defer tls.Close()
	p := libc.Xmalloc(tls, 8)
	defer libc.Xfree(tls, p)
	if rc := sqlite3.Xsqlite3_db_status(tls, w.db, sqlite3.SQLITE_DBSTATUS_CACHE_USED, p, p+4, 0); rc != sqlite3.SQLITE_OK {
		t.Fatalf("sqlite3_db_status: %d", rc)
	}
	used := int(int32(binary.NativeEndian.Uint32(libc.GoBytes(p, 4))))
	t.Logf("the writer's page cache holds %d KiB", used>>10)
	if limit := writerCacheKiB * 3 / 2 << 10; used > limit {
		t.Errorf("the writer's page cache holds %d bytes, more than %d", used, limit)
	}
}
