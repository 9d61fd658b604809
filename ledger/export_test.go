package ledger

import "reflect"

// QueuedBytes is the memory one queued record holds beyond its texts' bytes (and its
// attempts' and tools').
func QueuedBytes() int { return int(reflect.TypeFor[qrec]().Size()) }
