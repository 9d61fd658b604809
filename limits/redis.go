package limits

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The defaults of [RedisOptions], owned here (the gateway's config documents the same
// state.timeout).
const (
	DefaultTimeout = 50 * time.Millisecond
	DefaultLease   = 30 * time.Second
)

// RedisOptions configure a [Redis] limiter.
type RedisOptions struct {
	// URL is redis://[user:password@]host:port/db or rediss:// for TLS.
	URL string
	// KeyPrefix starts every key written.
	KeyPrefix string
	// Timeout bounds one round trip, dialing included. Zero or less means DefaultTimeout.
	Timeout time.Duration
	// Lease is how long a concurrency slot outlives its replica: held slots are renewed
	// every Lease/3, so a crashed replica's slots free themselves within Lease. Zero or
	// less means DefaultLease.
	Lease time.Duration
	// Errors, if not nil, is told about every failed round trip.
	Errors ErrorObserver

	// renewTicks, when not nil, replaces the renewal ticker: each value received renews
	// the held slots once (tests drive renewal with it, whatever the machine's load).
	renewTicks <-chan time.Time
}

// Redis is a [Limiter] on a Redis server shared by every replica. Each Admit and each
// Finish is one round trip running one script; nothing is read, then written back.
type Redis struct {
	client  *redis.Client
	prefix  string
	timeout time.Duration
	lease   time.Duration
	errs    ErrorObserver

	slotSeq  atomic.Uint64
	slotBase string

	mu   sync.Mutex
	held map[string][3]string // slot id -> its key, model and team slot sets ("" when none)

	renewTicks <-chan time.Time // RedisOptions.renewTicks

	// onLost is the NotifyLost function (lost.go); epochSeen is set once the marker was
	// seen or set (renewLoop's goroutine only).
	onLost    atomic.Pointer[func()]
	epochSeen bool

	stop chan struct{}
	done chan struct{}
}

var _ Limiter = (*Redis)(nil)

// NewRedis connects lazily to o.URL (it never fails on an unreachable server; Ready tells)
// and starts the lease renewal goroutine, which Close stops.
func NewRedis(o RedisOptions) (*Redis, error) {
	opts, err := redis.ParseURL(o.URL)
	if err != nil {
		return nil, errors.New("state.url: not a valid redis URL") // err may quote the password
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	opts.DialTimeout = o.Timeout
	opts.ReadTimeout = o.Timeout
	opts.WriteTimeout = o.Timeout
	opts.PoolTimeout = o.Timeout
	opts.ContextTimeoutEnabled = true
	opts.MaxRetries = -1 // a retry would exceed the timeout; on_error decides instead
	opts.DisableIdentity = true
	var b [6]byte
	_, _ = rand.Read(b[:])
	r := &Redis{client: redis.NewClient(opts), prefix: o.KeyPrefix, timeout: o.Timeout, lease: o.Lease, errs: o.Errors,
		slotBase: hex.EncodeToString(b[:]) + ":", held: map[string][3]string{},
		renewTicks: o.renewTicks, stop: make(chan struct{}), done: make(chan struct{})}
	go r.renewLoop()
	return r, nil
}

// Client returns the Redis client, for other users of the same server ([ToolCache]).
func (r *Redis) Client() *redis.Client { return r.client }

func (r *Redis) fail(op string, err error) error {
	if r.errs != nil {
		r.errs.StateError(op, err)
	}
	return fmt.Errorf("redis %s: %w", op, err)
}

func (r *Redis) keys(req *Request) []string {
	return []string{
		r.prefix + "rl:k:" + req.Key,
		r.prefix + "bu:k:" + req.Key,
		r.prefix + "cc:k:" + req.Key,
		r.prefix + "rl:m:" + req.Model,
		r.prefix + "cc:m:" + req.Model,
		r.prefix + "rl:t:" + req.Team,
		r.prefix + "bu:t:" + req.Team,
		r.prefix + "cc:t:" + req.Team,
	}
}

// Admit implements [Limiter] with one script round trip.
func (r *Redis) Admit(ctx context.Context, req *Request, a *Admission) error {
	*a = Admission{}
	if !req.Limited() {
		return nil
	}
	slot := r.slotBase + strconv.FormatUint(r.slotSeq.Add(1), 36)
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	keys := r.keys(req)
	res, err := admitScript.Run(ctx, r.client, keys,
		req.KeyRate.RequestsPerMinute, req.KeyRate.TokensPerMinute, req.KeyRate.Concurrent,
		req.Budget.Tokens, req.Budget.MicroUSD,
		req.ModelRate.RequestsPerMinute, req.ModelRate.TokensPerMinute, req.ModelRate.Concurrent,
		slot, r.lease.Milliseconds(), Window.Milliseconds(),
		max(0, req.Reserve.Tokens), max(0, req.Reserve.MicroUSD), req.Budget.period().Milliseconds(),
		req.TeamRate.RequestsPerMinute, req.TeamRate.TokensPerMinute, req.TeamRate.Concurrent,
		req.TeamBudget.Tokens, req.TeamBudget.MicroUSD, req.TeamBudget.period().Milliseconds()).Int64Slice()
	if err == nil && len(res) != 13 {
		err = fmt.Errorf("admit script returned %d values", len(res))
	}
	if err != nil {
		if req.KeyRate.Concurrent > 0 || req.ModelRate.Concurrent > 0 || req.TeamRate.Concurrent > 0 {
			// The script may have run and taken slots before the reply was lost: free
			// them now if Redis answers, rather than when their lease ends.
			go r.dropSlot(keys[2], keys[4], keys[7], slot)
		}
		return r.fail("admit", err)
	}
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	a.Denied, a.RetryAfter = Limit(res[0]), ms(res[1])
	left := ms(res[4])
	a.Requests = windowState(req.KeyRate.RequestsPerMinute, res[2], left)
	a.Tokens = windowState(req.KeyRate.TokensPerMinute, res[3], left)
	a.BudgetTokensLeft = max(0, req.Budget.Tokens-res[5])
	a.BudgetMicroUSDLeft = max(0, req.Budget.MicroUSD-res[6])
	a.keyWin, a.modelWin, a.budgetWin, a.teamWin, a.teamBudgetWin = res[8], res[9], res[10], res[11], res[12]
	a.reserved = res[8] != 0 || res[9] != 0 || res[10] != 0 || res[11] != 0 || res[12] != 0
	if res[7] == 1 {
		a.held, a.slot = true, slot
		var sets [3]string
		if req.KeyRate.Concurrent > 0 {
			sets[0] = keys[2]
		}
		if req.ModelRate.Concurrent > 0 {
			sets[1] = keys[4]
		}
		if req.TeamRate.Concurrent > 0 {
			sets[2] = keys[7]
		}
		r.mu.Lock()
		r.held[slot] = sets
		r.mu.Unlock()
	}
	return nil
}

// Finish implements [Limiter] with one script round trip. When it fails, the usage is not
// charged (the reservation stays instead) and the slots free themselves when their lease
// ends.
func (r *Redis) Finish(ctx context.Context, req *Request, a *Admission, u Usage) error {
	if !req.Limited() {
		return nil
	}
	slot := ""
	if a.held {
		slot = a.slot
		a.held = false
		r.mu.Lock()
		delete(r.held, slot)
		r.mu.Unlock()
	}
	var res Usage
	var keyWin, modelWin, budgetWin, teamWin, teamBudgetWin int64
	if a.reserved {
		a.reserved = false
		res, keyWin, modelWin, budgetWin = req.Reserve, a.keyWin, a.modelWin, a.budgetWin
		teamWin, teamBudgetWin = a.teamWin, a.teamBudgetWin
	}
	chargeKey := req.KeyRate.TokensPerMinute > 0
	chargeBudget := !req.Budget.zero()
	chargeModel := req.ModelRate.TokensPerMinute > 0
	chargeTeam := req.TeamRate.TokensPerMinute > 0
	chargeTeamBudget := !req.TeamBudget.zero()
	if slot == "" && !chargeBudget && !chargeTeamBudget &&
		(u.Tokens == 0 && keyWin == 0 && modelWin == 0 && teamWin == 0 || !chargeKey && !chargeModel && !chargeTeam) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.timeout)
	defer cancel()
	out, err := finishScript.Run(ctx, r.client, r.keys(req), u.Tokens, u.MicroUSD, slot,
		flag(chargeKey), flag(chargeBudget), flag(chargeModel),
		req.Budget.period().Milliseconds(), Window.Milliseconds(),
		max(0, res.Tokens), max(0, res.MicroUSD), keyWin, modelWin, budgetWin,
		flag(chargeTeam), flag(chargeTeamBudget), req.TeamBudget.period().Milliseconds(), teamWin, teamBudgetWin).Int64Slice()
	if err == nil && len(out) != 4 {
		err = fmt.Errorf("finish script returned %d values", len(out))
	}
	if err != nil {
		return r.fail("finish", err)
	}
	a.BudgetTokensLeft = max(0, req.Budget.Tokens-out[0])
	a.BudgetMicroUSDLeft = max(0, req.Budget.MicroUSD-out[1])
	a.TeamBudgetTokensLeft = max(0, req.TeamBudget.Tokens-out[2])
	a.TeamBudgetMicroUSDLeft = max(0, req.TeamBudget.MicroUSD-out[3])
	return nil
}

// dropSlot removes slot from the key's, the model's and the team's slot sets, best effort.
func (r *Redis) dropSlot(keySet, modelSet, teamSet, slot string) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	pipe := r.client.Pipeline()
	pipe.ZRem(ctx, keySet, slot)
	pipe.ZRem(ctx, modelSet, slot)
	pipe.ZRem(ctx, teamSet, slot)
	_, _ = pipe.Exec(ctx)
}

func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}

// renewLoop extends the leases of the slots this replica holds every lease/3 (or at
// every value of renewTicks), and checks whether the shared state was lost (lost.go).
func (r *Redis) renewLoop() {
	defer close(r.done)
	ticks := r.renewTicks
	if ticks == nil {
		t := time.NewTicker(r.lease / 3)
		defer t.Stop()
		ticks = t.C
	}
	for {
		select {
		case <-r.stop:
			return
		case <-ticks:
			r.renew()
			r.checkLost()
		}
	}
}

func (r *Redis) renew() {
	r.mu.Lock()
	var keys []string
	args := []any{r.lease.Milliseconds()}
	for slot, sets := range r.held {
		for _, set := range sets {
			if set != "" {
				keys = append(keys, set)
				args = append(args, slot)
			}
		}
	}
	r.mu.Unlock()
	if len(keys) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	if err := renewScript.Run(ctx, r.client, keys, args...).Err(); err != nil {
		r.fail("renew", err)
	}
}

// Ready implements [Limiter] with a PING.
func (r *Redis) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if err := r.client.Ping(ctx).Err(); err != nil {
		return r.fail("ready", err)
	}
	return nil
}

// Close stops lease renewal and closes the connections. Slots still held expire with
// their lease.
func (r *Redis) Close() error {
	select {
	case <-r.stop:
		return nil
	default:
	}
	close(r.stop)
	<-r.done
	return r.client.Close()
}
