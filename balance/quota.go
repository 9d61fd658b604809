package balance

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Shared quotas: a deployment's RequestsPerMinute and TokensPerMinute are its provider's
// quota, which every replica of the gateway spends. With a QuotaStore (Options.Quotas)
// a Set exchanges its deployments' counts with the other replicas at most every
// Options.QuotaSync (default DefaultQuotaSync), from the request path but never on it: the
// first Pick after the interval starts the exchange in its own goroutine, and no Pick
// waits for it. Between exchanges each replica counts its own requests on top of the
// totals it last saw, so the replicas together may overshoot a quota by what they admit in
// one interval. The windows are clock minutes, the same on every replica. A 429's rest
// goes along, for every deployment of the set, quota or not: a deployment one replica saw
// throttled rests on all of them.

// DefaultQuotaSync is how often a Set exchanges its quota counts by default. A negative
// Options.QuotaSync leaves every exchange to SyncQuotas' callers.
const DefaultQuotaSync = time.Second

// QuotaStore shares the deployments' minute counts and rests between replicas.
type QuotaStore interface {
	// Exchange adds each entry's Reqs and Tokens, this replica's counts since its last
	// exchange, to the shared counts of its deployment in the clock minute window of now
	// (unix nanoseconds), and sets them to the shared totals; it raises the shared
	// RestUntil (unix nanoseconds) to the entry's and sets the entry's to the shared one.
	Exchange(ctx context.Context, now int64, entries []QuotaEntry) error
}

// QuotaEntry is one deployment's share of an exchange.
type QuotaEntry struct {
	// Key names the deployment among every replica's: the model and its name.
	Model, Deployment string
	Reqs, Tokens      int64
	RestUntil         int64
}

// window is the start of the clock minute of now (unix nanoseconds).
func window(now int64) int64 { return now - now%int64(time.Minute) }

// maybeSync starts an exchange of the set's quotas when one is due at now.
func (s *Set) maybeSync(now int64) {
	next := s.nextSync.Load()
	if s.quotas == nil || s.syncEvery < 0 || now < next || !s.nextSync.CompareAndSwap(next, now+int64(s.syncEvery)) {
		return
	}
	go s.SyncQuotas(context.Background(), now)
}

// SyncQuotas exchanges the counts and rests of the set's deployments with the QuotaStore
// (Options.Quotas), at now; Pick calls it by itself. Its error is the store's: the counts
// are then kept to be sent with the next exchange.
func (s *Set) SyncQuotas(ctx context.Context, now int64) error {
	if s.quotas == nil {
		return nil
	}
	w := window(now)
	var entries []QuotaEntry
	var states []*State
	for i := range s.deps {
		d := &s.deps[i]
		st := d.st
		st.roll(now)
		if st.window.Load() != w {
			continue // a window rolled between the two reads: the next exchange has it
		}
		entries = append(entries, QuotaEntry{Model: s.model, Deployment: d.Name,
			Reqs: st.pendReqs.Swap(0), Tokens: st.pendTokens.Swap(0), RestUntil: st.restUntil.Load()})
		states = append(states, st)
	}
	if len(entries) == 0 {
		return nil
	}
	sent := append([]QuotaEntry(nil), entries...)
	if err := s.quotas.Exchange(ctx, now, entries); err != nil {
		for i, st := range states { // kept for the next exchange
			st.pendReqs.Add(sent[i].Reqs)
			st.pendTokens.Add(sent[i].Tokens)
		}
		return err
	}
	for i, st := range states {
		if st.window.Load() != w {
			continue // the minute is over: its totals no longer matter
		}
		e := entries[i]
		// What this replica counted while the exchange was on its way is not in the
		// totals yet.
		st.reqs.Store(e.Reqs + st.pendReqs.Load())
		st.tokens.Store(e.Tokens + st.pendTokens.Load())
		for {
			r := st.restUntil.Load()
			if e.RestUntil <= r || st.restUntil.CompareAndSwap(r, e.RestUntil) {
				break
			}
		}
	}
	return nil
}

// quotaScript adds ARGV[1] requests and ARGV[2] tokens to the window's counts at KEYS[1]
// (a hash that expires ARGV[4] milliseconds later), raises the rest at KEYS[2] to
// ARGV[3] (unix milliseconds; ARGV[5] is now, so the key expires with the rest), and
// returns the counts and the rest.
var quotaScript = redis.NewScript(`
local r = redis.call('HINCRBY', KEYS[1], 'r', ARGV[1])
local t = redis.call('HINCRBY', KEYS[1], 't', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
local rest = tonumber(redis.call('GET', KEYS[2]) or '0')
local mine = tonumber(ARGV[3])
if mine > rest then
  redis.call('SET', KEYS[2], ARGV[3], 'PX', mine - tonumber(ARGV[5]))
  rest = mine
end
return {r, t, rest}
`)

// quotaKeys are the Redis keys of a deployment's window counts and rest, in one hash
// slot: "<prefix>quota:{<model>/<deployment>}:<window in unix seconds>" and
// "<prefix>rest:{<model>/<deployment>}".
func (r *Redis) quotaKeys(e *QuotaEntry, window int64) []string {
	tag := "{" + e.Model + "/" + e.Deployment + "}"
	return []string{r.Prefix + "quota:" + tag + ":" + strconv.FormatInt(window/int64(time.Second), 10), r.Prefix + "rest:" + tag}
}

// Exchange implements QuotaStore: one pipelined round trip for every entry, bounded by
// the Redis store's Timeout.
func (r *Redis) Exchange(ctx context.Context, now int64, entries []QuotaEntry) error {
	ctx, cancel := r.bound(ctx)
	defer cancel()
	nowMS, w := now/int64(time.Millisecond), window(now)
	ttl := (2 * time.Minute).Milliseconds()
	pipe := r.Client.Pipeline()
	cmds := make([]*redis.Cmd, len(entries))
	for i := range entries {
		e := &entries[i]
		rest := e.RestUntil / int64(time.Millisecond)
		if rest <= nowMS {
			rest = 0
		}
		cmds[i] = quotaScript.Eval(ctx, pipe, r.quotaKeys(e, w), e.Reqs, e.Tokens, rest, ttl, nowMS)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	for i, c := range cmds {
		res, err := c.Int64Slice()
		if err != nil {
			return err
		}
		if len(res) != 3 {
			return errors.New("balance: unexpected quota exchange reply")
		}
		entries[i].Reqs, entries[i].Tokens = res[0], res[1]
		entries[i].RestUntil = res[2] * int64(time.Millisecond)
	}
	return nil
}
