// Package ledger keeps the usage ledger: one Record per client request (who, which model,
// what it cost, how long it took, how it ended), written off the request path into
// SQLite (embedded, the default) or PostgreSQL (shared by replicas), with per-minute,
// per-hour and per-day rollups by key, team, model and status that usage reports read.
//
// The contract of the request path is Add: it copies the record into a bounded queue
// and returns at once, never blocking and never allocating; a full queue drops the
// record and counts it (Options.OnDrop). A writer goroutine takes the queue in batches
// and inserts each batch and its rollups in one transaction (on PostgreSQL a binary
// COPY the ledger encodes itself; on SQLite through SQLite's own API, on a connection of
// the writer's own, its statements prepared once, the records a batch to a row: up to 256
// in one compact JSON text the ledger encodes and its readers decode, batches.go; readers
// keep the database/sql pool). While
// the database cannot be written, batches go to a bounded local spool file, written
// back once it can; Ready reports the failure meanwhile. Close drains the queue and the
// spool (as far as its context allows) before closing the database.
//
// Growth is bounded: raw records, minute, hour and day rollups each have a retention,
// and a pruner deletes what is older in small batches, so no delete holds a long lock;
// on PostgreSQL the raw records are partitioned by month and whole months are dropped.
// Requests refused before their key was known make no record, only a count in the
// rollups (AddUnauthenticated). Spend reads the rollups that budgets are re-seeded from
// at start; Teams and ChangeTeam keep the admin API's teams beside its keys.
// The schema is versioned (migrations, applied at Open) and documented in
// docs/ledger.md.
package ledger
