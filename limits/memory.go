package limits

import (
	"context"
	"sync"
	"time"
)

// Memory is a [Limiter] whose counters live in this process. The zero value is not usable;
// call NewMemory.
type Memory struct {
	now func() time.Time

	mu     sync.Mutex
	keys   map[string]*counters
	models map[string]*counters
	teams  map[string]*counters
}

var _ Limiter = (*Memory)(nil)

// counters are one subject's windows; times are Unix nanoseconds, zero before the first use.
type counters struct {
	windowEnd        int64
	requests, tokens int64
	concurrent       int64
	budgetEnd        int64
	budgetTokens     int64
	budgetMicroUSD   int64
}

// NewMemory returns an in-process limiter; now, if not nil, replaces time.Now.
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, keys: map[string]*counters{}, models: map[string]*counters{}, teams: map[string]*counters{}}
}

func (m *Memory) subject(set map[string]*counters, name string) *counters {
	c, ok := set[name]
	if !ok {
		c = &counters{}
		set[name] = c
	}
	return c
}

// lock takes the time, then m.mu, which the caller releases, and returns the counters of
// r's key, when r has a model rate of its model, and when r has team limits of its team
// (nil otherwise), made as needed.
func (m *Memory) lock(r *Request) (now int64, k, mc, tc *counters) {
	now = m.now().UnixNano()
	m.mu.Lock()
	k = m.subject(m.keys, r.Key)
	if !r.ModelRate.zero() {
		mc = m.subject(m.models, r.Model)
	}
	if r.teamLimited() {
		tc = m.subject(m.teams, r.Team)
	}
	return now, k, mc, tc
}

// window returns c's rate window as of now, starting a new one when the last has ended.
func (c *counters) window(now int64) {
	if now >= c.windowEnd {
		c.windowEnd, c.requests, c.tokens = now+int64(Window), 0, 0
	}
}

func (c *counters) budget(now int64, b Budget) {
	if now >= c.budgetEnd {
		c.budgetEnd, c.budgetTokens, c.budgetMicroUSD = now+int64(b.period()), 0, 0
	}
}

// Admit implements [Limiter].
func (m *Memory) Admit(_ context.Context, r *Request, a *Admission) error {
	*a = Admission{}
	if !r.Limited() {
		return nil
	}
	now, k, mc, tc := m.lock(r)
	defer m.mu.Unlock()
	k.window(now)
	if mc != nil {
		mc.window(now)
	}
	if !r.Budget.zero() && now >= k.budgetEnd {
		k.budgetTokens, k.budgetMicroUSD = 0, 0 // the period ended; the next starts with a charge
	}
	if tc != nil {
		tc.window(now)
		if !r.TeamBudget.zero() && now >= tc.budgetEnd {
			tc.budgetTokens, tc.budgetMicroUSD = 0, 0
		}
	}
	left := time.Duration(k.windowEnd - now)
	switch {
	case over(r.KeyRate.RequestsPerMinute, k.requests):
		a.Denied, a.RetryAfter = KeyRequests, left
	case over(r.KeyRate.TokensPerMinute, k.tokens):
		a.Denied, a.RetryAfter = KeyTokens, left
	case over(r.KeyRate.Concurrent, k.concurrent):
		a.Denied, a.RetryAfter = KeyConcurrent, time.Second
	case over(r.Budget.Tokens, k.budgetTokens):
		a.Denied, a.RetryAfter = BudgetTokens, time.Duration(k.budgetEnd-now)
	case over(r.Budget.MicroUSD, k.budgetMicroUSD):
		a.Denied, a.RetryAfter = BudgetUSD, time.Duration(k.budgetEnd-now)
	case tc != nil && over(r.TeamRate.RequestsPerMinute, tc.requests):
		a.Denied, a.RetryAfter = TeamRequests, time.Duration(tc.windowEnd-now)
	case tc != nil && over(r.TeamRate.TokensPerMinute, tc.tokens):
		a.Denied, a.RetryAfter = TeamTokens, time.Duration(tc.windowEnd-now)
	case tc != nil && over(r.TeamRate.Concurrent, tc.concurrent):
		a.Denied, a.RetryAfter = TeamConcurrent, time.Second
	case tc != nil && over(r.TeamBudget.Tokens, tc.budgetTokens):
		a.Denied, a.RetryAfter = TeamBudgetTokens, time.Duration(tc.budgetEnd-now)
	case tc != nil && over(r.TeamBudget.MicroUSD, tc.budgetMicroUSD):
		a.Denied, a.RetryAfter = TeamBudgetUSD, time.Duration(tc.budgetEnd-now)
	case mc != nil && over(r.ModelRate.RequestsPerMinute, mc.requests):
		a.Denied, a.RetryAfter = ModelRequests, time.Duration(mc.windowEnd-now)
	case mc != nil && over(r.ModelRate.TokensPerMinute, mc.tokens):
		a.Denied, a.RetryAfter = ModelTokens, time.Duration(mc.windowEnd-now)
	case mc != nil && over(r.ModelRate.Concurrent, mc.concurrent):
		a.Denied, a.RetryAfter = ModelConcurrent, time.Second
	default:
		k.requests++
		if mc != nil {
			mc.requests++
		}
		if tc != nil {
			tc.requests++
		}
		if r.KeyRate.Concurrent > 0 || r.ModelRate.Concurrent > 0 || r.TeamRate.Concurrent > 0 {
			k.concurrent++
			if mc != nil {
				mc.concurrent++
			}
			if tc != nil {
				tc.concurrent++
			}
			a.held = true
		}
		m.reserve(now, r, a, k, mc, tc)
	}
	a.Requests = windowState(r.KeyRate.RequestsPerMinute, k.requests, left)
	a.Tokens = windowState(r.KeyRate.TokensPerMinute, k.tokens, left)
	a.BudgetTokensLeft = max(0, r.Budget.Tokens-k.budgetTokens)
	a.BudgetMicroUSDLeft = max(0, r.Budget.MicroUSD-k.budgetMicroUSD)
	return nil
}

// reserve takes r.Reserve for an admitted request: it charges the key's and the model's
// token windows and the budget, and notes in a which windows hold it.
func (m *Memory) reserve(now int64, r *Request, a *Admission, k, mc, tc *counters) {
	res := r.Reserve
	if res.Tokens <= 0 && res.MicroUSD <= 0 {
		return
	}
	a.reserved = true
	if res.Tokens > 0 {
		k.tokens += res.Tokens
		a.keyWin = k.windowEnd
		if mc != nil {
			mc.tokens += res.Tokens
			a.modelWin = mc.windowEnd
		}
		if tc != nil {
			tc.tokens += res.Tokens
			a.teamWin = tc.windowEnd
		}
	}
	if !r.Budget.zero() {
		k.budget(now, r.Budget)
		k.budgetTokens += max(0, res.Tokens)
		k.budgetMicroUSD += max(0, res.MicroUSD)
		a.budgetWin = k.budgetEnd
	}
	if tc != nil && !r.TeamBudget.zero() {
		tc.budget(now, r.TeamBudget)
		tc.budgetTokens += max(0, res.Tokens)
		tc.budgetMicroUSD += max(0, res.MicroUSD)
		a.teamBudgetWin = tc.budgetEnd
	}
}

// settle returns what a window is charged at Finish: the usage minus the reservation when
// the window that holds the reservation (held; zero for none) is still the current one
// (end), the whole usage otherwise.
func settle(used, reserved, held, end int64) int64 {
	if held != 0 && held == end {
		return used - reserved
	}
	return used
}

// over reports whether a limit (zero: none) leaves nothing for another request.
func over(limit, used int64) bool { return limit > 0 && used >= limit }

func windowState(limit, used int64, reset time.Duration) WindowState {
	if limit <= 0 {
		return WindowState{}
	}
	return WindowState{Limit: limit, Remaining: max(0, limit-used), Reset: reset}
}

// Finish implements [Limiter].
func (m *Memory) Finish(_ context.Context, r *Request, a *Admission, u Usage) error {
	if !r.Limited() {
		return nil
	}
	now, k, mc, tc := m.lock(r)
	defer m.mu.Unlock()
	if a.held {
		a.held = false
		k.concurrent--
		if mc != nil {
			mc.concurrent--
		}
		if tc != nil {
			tc.concurrent--
		}
	}
	var res Usage
	var keyWin, modelWin, budgetWin, teamWin, teamBudgetWin int64
	if a.reserved {
		a.reserved = false
		res, keyWin, modelWin, budgetWin = r.Reserve, a.keyWin, a.modelWin, a.budgetWin
		teamWin, teamBudgetWin = a.teamWin, a.teamBudgetWin
	}
	if u.Tokens > 0 || res.Tokens > 0 {
		k.window(now)
		k.tokens = max(0, k.tokens+settle(u.Tokens, res.Tokens, keyWin, k.windowEnd))
		if mc != nil {
			mc.window(now)
			mc.tokens = max(0, mc.tokens+settle(u.Tokens, res.Tokens, modelWin, mc.windowEnd))
		}
		if tc != nil {
			tc.window(now)
			tc.tokens = max(0, tc.tokens+settle(u.Tokens, res.Tokens, teamWin, tc.windowEnd))
		}
	}
	if tc != nil && !r.TeamBudget.zero() && (u.Tokens > 0 || u.MicroUSD > 0 || teamBudgetWin != 0) {
		tc.budget(now, r.TeamBudget)
		tc.budgetTokens = max(0, tc.budgetTokens+settle(u.Tokens, max(0, res.Tokens), teamBudgetWin, tc.budgetEnd))
		tc.budgetMicroUSD = max(0, tc.budgetMicroUSD+settle(u.MicroUSD, max(0, res.MicroUSD), teamBudgetWin, tc.budgetEnd))
	}
	if tc != nil {
		a.TeamBudgetTokensLeft = max(0, r.TeamBudget.Tokens-tc.budgetTokens)
		a.TeamBudgetMicroUSDLeft = max(0, r.TeamBudget.MicroUSD-tc.budgetMicroUSD)
	}
	if !r.Budget.zero() && (u.Tokens > 0 || u.MicroUSD > 0 || budgetWin != 0) {
		k.budget(now, r.Budget)
		k.budgetTokens = max(0, k.budgetTokens+settle(u.Tokens, max(0, res.Tokens), budgetWin, k.budgetEnd))
		k.budgetMicroUSD = max(0, k.budgetMicroUSD+settle(u.MicroUSD, max(0, res.MicroUSD), budgetWin, k.budgetEnd))
	}
	a.BudgetTokensLeft = max(0, r.Budget.Tokens-k.budgetTokens)
	a.BudgetMicroUSDLeft = max(0, r.Budget.MicroUSD-k.budgetMicroUSD)
	return nil
}

// Ready implements [Limiter]; memory is always ready.
func (m *Memory) Ready(context.Context) error { return nil }

// Close implements [Limiter].
func (m *Memory) Close() error { return nil }
