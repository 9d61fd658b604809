package limits

import (
	"context"
	"time"
)

// Window is the length of the rate-limit windows: requests and tokens are counted per
// minute, in a window that starts with the first request or charge counted in it.
const Window = time.Minute

// Rate bounds one subject, a key or a model. Zero fields mean no limit.
type Rate struct {
	// RequestsPerMinute is how many requests are admitted per window.
	RequestsPerMinute int64
	// TokensPerMinute admits requests while the tokens charged in the window are below it.
	TokensPerMinute int64
	// Concurrent is how many admitted requests may be unfinished at once.
	Concurrent int64
}

func (r Rate) zero() bool { return r == Rate{} }

// Budget caps a key's spend per period. A request is admitted while both amounts charged
// and reserved in the current period are below their caps (see [Request.Reserve]). Zero
// caps mean none.
type Budget struct {
	// Tokens caps the tokens charged per period.
	Tokens int64
	// MicroUSD caps the cost charged per period, in millionths of a US dollar.
	MicroUSD int64
	// Period is the budget window; it starts with its first charge or reservation. Zero
	// with a cap set means a period of 30 days.
	Period time.Duration
}

func (b Budget) zero() bool { return b.Tokens == 0 && b.MicroUSD == 0 }

func (b Budget) period() time.Duration {
	if b.Period <= 0 {
		return 720 * time.Hour
	}
	return b.Period
}

// Request is what one chat request is checked against: its key's limits and budget, and
// its model's limits (for all keys together). A Request must not change between Admit and
// Finish.
type Request struct {
	Key     string
	KeyRate Rate
	Budget  Budget
	// Model is the model's name; its counters are shared by every key.
	Model     string
	ModelRate Rate
	// Team is the key's team; its limits and budget are shared by every key of the team
	// and apply on top of each key's own. Zero TeamRate and TeamBudget mean none.
	Team       string
	TeamRate   Rate
	TeamBudget Budget
	// Reserve is what the request may cost, estimated before it runs (its prompt and its
	// output cap). Admit adds it at once to the token windows (key and model) and to the
	// budget, so that requests running at the same time see each other; Finish replaces
	// it by the real usage. A request is admitted while what is charged and reserved is
	// below each limit, and then reserves its whole estimate: a limit is exceeded by at
	// most one request's real usage (the last one admitted; more only when a request
	// uses more than its estimate), however many run at once. The zero value reserves
	// nothing: tokens count only once charged.
	Reserve Usage
}

// Limited reports whether any limit or budget applies to r; Admit and Finish of a
// request without any do nothing.
func (r *Request) Limited() bool {
	return !r.KeyRate.zero() || !r.ModelRate.zero() || !r.Budget.zero() || r.teamLimited()
}

// teamLimited reports whether a team limit or budget applies to r.
func (r *Request) teamLimited() bool { return !r.TeamRate.zero() || !r.TeamBudget.zero() }

// Limit names the limit that refused a request. Its String is the limit label of
// gateway_ratelimit_rejections_total.
type Limit uint8

// The limits. They are checked in this order, except that the team's (appended last, to
// keep the values of the others) are checked after the key's budget and before the
// model's limits.
const (
	NoLimit Limit = iota
	KeyRequests
	KeyTokens
	KeyConcurrent
	BudgetTokens
	BudgetUSD
	ModelRequests
	ModelTokens
	ModelConcurrent
	TeamRequests
	TeamTokens
	TeamConcurrent
	TeamBudgetTokens
	TeamBudgetUSD
)

var limitNames = [...]string{"", "requests", "tokens", "concurrent", "budget_tokens", "budget_usd",
	"model_requests", "model_tokens", "model_concurrent", "team_requests", "team_tokens", "team_concurrent",
	"team_budget_tokens", "team_budget_usd"}

func (l Limit) String() string {
	if int(l) < len(limitNames) {
		return limitNames[l]
	}
	return "unknown"
}

// Quota reports whether the limit is a budget (OpenAI's insufficient_quota) rather than a
// rate limit (rate_limit_exceeded).
func (l Limit) Quota() bool {
	return l == BudgetTokens || l == BudgetUSD || l == TeamBudgetTokens || l == TeamBudgetUSD
}

// Team reports whether the limit is one of the team's.
func (l Limit) Team() bool { return l >= TeamRequests && l <= TeamBudgetUSD }

// WindowState is one per-minute limit of a key as OpenAI's x-ratelimit-* headers show it.
type WindowState struct {
	// Limit is the configured limit; zero means none applies (no headers).
	Limit int64
	// Remaining is what is left in the window, never negative.
	Remaining int64
	// Reset is when the window ends and the limit is restored.
	Reset time.Duration
}

// Admission is the outcome of Admit. The zero value is ready for Admit, which overwrites
// it; pass the same value to Finish.
type Admission struct {
	// Denied names the limit that refused the request; NoLimit means admitted.
	Denied Limit
	// RetryAfter is, for a refused request, when trying again may succeed.
	RetryAfter time.Duration
	// Requests and Tokens are the key's per-minute windows after this admission.
	Requests, Tokens WindowState
	// BudgetTokensLeft and BudgetMicroUSDLeft are what remains of the key's budget caps
	// (meaningful only for caps that are set), updated by Admit and by Finish.
	BudgetTokensLeft, BudgetMicroUSDLeft int64
	// TeamBudgetTokensLeft and TeamBudgetMicroUSDLeft are what remains of the team's
	// budget caps (meaningful only for caps that are set), updated by Finish.
	TeamBudgetTokensLeft, TeamBudgetMicroUSDLeft int64

	// held is set when the request holds concurrency slots that Finish releases.
	held bool
	// slot identifies the held slots (Redis).
	slot string
	// reserved is set when Request.Reserve was taken; keyWin, modelWin and budgetWin name
	// the windows it went to (Memory: their end; Redis: their id), so that Finish
	// settles a reservation in the window that holds it and charges a new window in full.
	reserved                    bool
	keyWin, modelWin, budgetWin int64
	// teamWin and teamBudgetWin are the team's windows that hold the reservation.
	teamWin, teamBudgetWin int64
}

// Usage is what a finished request is charged.
type Usage struct {
	// Tokens are prompt plus completion tokens of every model turn.
	Tokens int64
	// MicroUSD is their cost in millionths of a US dollar.
	MicroUSD int64
}

// Limiter admits requests and charges them. Implementations are safe for concurrent use.
type Limiter interface {
	// Admit checks r against its limits and, when every one passes, counts the request
	// and takes its concurrency slots, all at once. It fills a; a.Denied tells the outcome.
	// An error means the state could not be consulted: a then holds nothing.
	Admit(ctx context.Context, r *Request, a *Admission) error
	// Finish charges u to r's token windows and budget in place of the reservation Admit
	// took (r.Reserve: the windows are charged u minus it when it is still in them, u
	// when a new window began since), and releases the slots a holds. It must be called
	// once for every admitted request, however it ended. When it fails, the reservation
	// stays charged.
	Finish(ctx context.Context, r *Request, a *Admission, u Usage) error
	// Ready reports whether the state can be reached.
	Ready(ctx context.Context) error
	// Close releases the limiter's resources.
	Close() error
}

// ErrorObserver is told about every failed round trip to a shared state, by operation:
// admit, finish, renew, cache_get, cache_add, ready.
type ErrorObserver interface {
	StateError(op string, err error)
}
