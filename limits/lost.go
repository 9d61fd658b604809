package limits

import (
	"context"
	"time"
)

// Lost state: a Redis server restarted without persistence, or flushed, forgets every
// budget period the replicas counted, and the budgets would start again from zero while
// the gateways run. A [Redis] limiter notices: with each lease renewal (every Lease/3) it
// sets its marker key "<prefix>epoch" if it is missing; the replica that finds it missing
// after it had seen it (one replica for each loss, since the first to set it wins) calls
// the function given to NotifyLost, in its own goroutine. The gateway re-seeds the
// budgets from its ledger then (one replica's seeding restores them for all).

// LossNotifier is a [Limiter] whose shared state can be lost while it runs.
type LossNotifier interface {
	// NotifyLost has f called when the limiter finds that its shared state was lost; nil
	// stops it.
	NotifyLost(f func())
}

var _ LossNotifier = (*Redis)(nil)

// epochKey is the marker whose absence says the state was lost.
func (r *Redis) epochKey() string { return r.prefix + "epoch" }

// NotifyLost implements [LossNotifier].
func (r *Redis) NotifyLost(f func()) {
	if f == nil {
		r.onLost.Store(nil)
		return
	}
	r.onLost.Store(&f)
}

// checkLost sets the marker if it is missing, and calls the NotifyLost function when it
// was missing after this process had seen it (renewLoop's goroutine only).
func (r *Redis) checkLost() {
	f := r.onLost.Load()
	if f == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	set, err := r.client.SetNX(ctx, r.epochKey(), time.Now().UTC().Format(time.RFC3339), 0).Result()
	if err != nil {
		r.fail("epoch", err)
		return
	}
	if set && r.epochSeen {
		go (*f)()
	}
	r.epochSeen = true
}
