package console

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is where the sessions go when the replicas share them: a Redis client (the
// limiter's, state.type redis; a Redis Cluster client works too), the prefix of every key
// (state.key_prefix) and the bound of one round trip (state.timeout, at least a second
// here: a sign-in is not the hot path).
type Redis struct {
	Client  redis.UniversalClient
	Prefix  string
	Timeout time.Duration
}

// redisSessions keeps the sessions in Redis: each at <prefix>console:session:{console}:<hex
// of the SHA-256 of the cookie value> (the value itself is kept nowhere), holding the
// actor, the CSRF token and the end, expiring with the session; and an index, the sorted
// set <prefix>console:sessions:{console} of those hex names by their end, which bounds
// them: a sign-in drops the ended ones, then, while max are held, the ones closest to
// their end. Sign-out deletes the session's key, so every replica refuses its cookie at
// once.
//
// Redis Cluster: the keys share the hash tag {console} (sessionTag), so they are in one
// hash slot, and the sign-in script, which touches the index and several sessions, runs on
// one node. A key_prefix with a complete hash tag of its own ("{agate}:") moves them all
// to that tag's slot, together; one with an unmatched "{" or an empty "{}" would part them
// (the docs say so). Every other operation is a single-key command.
type redisSessions struct {
	r   Redis
	max int
	ttl time.Duration
	now func() time.Time
}

func newRedisSessions(r *Redis, limit int, ttl time.Duration, now func() time.Time) *redisSessions {
	rs := &redisSessions{r: *r, max: limit, ttl: ttl, now: now}
	rs.r.Timeout = max(rs.r.Timeout, time.Second)
	return rs
}

// openScript stores a session and bounds the index, atomically. KEYS: the index, the
// session's key. ARGV: now (µs), the session's end (µs: the index's score, exact in a
// double, so that sign-ins a millisecond apart keep their order), max, the value, the TTL (ms), the
// session's name in the index, the prefix of the sessions' keys.
var openScript = redis.NewScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[3]) + 1
if over > 0 then
  local old = redis.call('ZPOPMIN', KEYS[1], over)
  for i = 1, #old, 2 do redis.call('DEL', ARGV[7] .. old[i]) end
end
redis.call('SET', KEYS[2], ARGV[4], 'PX', ARGV[5])
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[6])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
`)

// sessionTag is the hash tag of every session key (see redisSessions).
const sessionTag = "{console}"

func (s *redisSessions) index() string     { return s.r.Prefix + "console:sessions:" + sessionTag }
func (s *redisSessions) keyPrefix() string { return s.r.Prefix + "console:session:" + sessionTag + ":" }

// name is the session's name in Redis: the hex SHA-256 of its cookie value.
func name(id string) string {
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:])
}

func (s *redisSessions) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.r.Timeout)
}

func (s *redisSessions) open(actor string) (string, session, error) {
	id := token()
	now := s.now()
	v := session{actor: actor, csrf: token(), expires: now.Add(s.ttl)}
	n := name(id)
	ctx, cancel := s.ctx()
	defer cancel()
	err := openScript.Run(ctx, s.r.Client, []string{s.index(), s.keyPrefix() + n},
		now.UnixMicro(), v.expires.UnixMicro(), s.max, encodeSession(v), s.ttl.Milliseconds(), n, s.keyPrefix()).Err()
	if err != nil {
		return "", session{}, err
	}
	return id, v, nil
}

func (s *redisSessions) get(id string) (session, bool) {
	if id == "" || len(id) > 128 {
		return session{}, false
	}
	ctx, cancel := s.ctx()
	defer cancel()
	raw, err := s.r.Client.Get(ctx, s.keyPrefix()+name(id)).Result()
	if err != nil { // none, or Redis did not answer: not signed in
		return session{}, false
	}
	v, ok := decodeSession(raw)
	if !ok || !v.expires.After(s.now()) {
		return session{}, false
	}
	return v, true
}

func (s *redisSessions) end(id string) {
	n := name(id)
	ctx, cancel := s.ctx()
	defer cancel()
	s.r.Client.Del(ctx, s.keyPrefix()+n)
	s.r.Client.ZRem(ctx, s.index(), n)
}

func (s *redisSessions) len() int {
	ctx, cancel := s.ctx()
	defer cancel()
	n, _ := s.r.Client.ZCard(ctx, s.index()).Result()
	return int(n)
}

// encodeSession is a session's stored value: its end (Unix ms), its CSRF token
// (base64url) and its actor (a configured admin name), separated by newlines.
func encodeSession(v session) string {
	return strconv.FormatInt(v.expires.UnixMilli(), 10) + "\n" + v.csrf + "\n" + v.actor
}

// decodeSession reads encodeSession's value; ok is false for anything else.
func decodeSession(raw string) (session, bool) {
	end, rest, ok := strings.Cut(raw, "\n")
	if !ok {
		return session{}, false
	}
	csrf, actor, ok := strings.Cut(rest, "\n")
	ms, err := strconv.ParseInt(end, 10, 64)
	if !ok || err != nil || csrf == "" || len(raw) > 1024 {
		return session{}, false
	}
	return session{actor: actor, csrf: csrf, expires: time.UnixMilli(ms)}, true
}
