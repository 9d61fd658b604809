package ledger

import "reflect"

// QueuedBytes is the memory one queued record holds beyond its strings' bytes.
func QueuedBytes() int { return int(reflect.TypeFor[Record]().Size()) }
