package console_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/limits/redistest"
)

// TestConsole_SessionsSharedInRedis: with state.type redis the console's sessions live in
// Redis (a real redis-server), so a second gateway behind the same load balancer accepts
// the cookie the first signed in, and the CSRF token with it; a sign-out on either
// revokes it on both; sessions expire with their TTL and are bounded by max_sessions.
func TestConsole_SessionsSharedInRedis(t *testing.T) {
	rs := redistest.Start(t)
	path := sqliteLedgers.Fresh(t) // one ledger database for both replicas
	y := strings.Replace(consoleYAML(sqliteLedger(path)), "  resync: 100ms",
		"  resync: 100ms\n  console: {max_sessions: 2, session_ttl: 10m}", 1) +
		"state: {type: redis, url: \"" + rs.URL() + "\", key_prefix: \"ct:\"}\n"
	a := gatewaytest.StartYAML(t, y, gatewaytest.Options{})
	b := gatewaytest.StartYAML(t, y, gatewaytest.Options{})

	// Signed in on A; the cookie (the jar sends it to both: same host) works on B.
	c := client(t)
	csrf := signInAt(t, c, a.URL)
	if code, body := call(t, c, "GET", b.URL+"/admin/v1/keys", "", nil); code != 200 {
		t.Fatalf("B with A's session: %d %s", code, body)
	}
	if code, body := call(t, c, "GET", b.URL+"/console/session", "", nil); code != 200 || !strings.Contains(body, csrf) {
		t.Errorf("B's view of A's session: %d %s", code, body)
	}
	h := map[string]string{"Content-Type": "application/json", "X-CSRF-Token": csrf}
	if code, body := call(t, c, "POST", b.URL+"/admin/v1/keys", `{"name":"from-b","models":["demo"]}`, h); code != 201 {
		t.Errorf("a change on B with A's CSRF token: %d %s", code, body)
	}
	if code, _ := call(t, c, "POST", b.URL+"/admin/v1/keys", `{"name":"forged","models":["demo"]}`,
		map[string]string{"Content-Type": "application/json", "X-CSRF-Token": "forged"}); code != 403 {
		t.Errorf("a change on B with a forged token: %d, want 403", code)
	}

	// Stored expiring, under the prefix, by digest: the cookie's value is in no key.
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	t.Cleanup(func() { rc.Close() })
	ctx := context.Background()
	keys, err := rc.Keys(ctx, "ct:console:session:*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("session keys %q, %v; want 1", keys, err)
	}
	if ttl := rc.PTTL(ctx, keys[0]).Val(); ttl <= 0 || ttl > 10*time.Minute {
		t.Errorf("the session's TTL is %s, want (0, 10m]", ttl)
	}

	// Signed out on B: A refuses the cookie too (a copy kept from before the sign-out,
	// which told this browser to drop it).
	u, _ := url.Parse(a.URL)
	kept := client(t)
	kept.Jar.SetCookies(u, c.Jar.Cookies(u))
	if code, body := call(t, c, "DELETE", b.URL+"/console/session", "", map[string]string{"X-CSRF-Token": csrf}); code != 204 {
		t.Fatalf("sign-out on B: %d %s", code, body)
	}
	if code, _ := call(t, kept, "GET", a.URL+"/admin/v1/keys", "", nil); code != 401 {
		t.Errorf("A after the sign-out on B: %d, want 401", code)
	}
	if n, _ := rc.Exists(ctx, keys[0]).Result(); n != 0 {
		t.Error("the session's key outlived its sign-out")
	}

	// Bounded: max_sessions 2, three sign-ins; the first is gone, on both replicas.
	first, second, third := client(t), client(t), client(t)
	signInAt(t, first, a.URL)
	signInAt(t, second, b.URL)
	signInAt(t, third, a.URL)
	if code, _ := call(t, first, "GET", b.URL+"/admin/v1/keys", "", nil); code != 401 {
		t.Errorf("the first of three sessions (max 2): %d, want 401", code)
	}
	if code, _ := call(t, second, "GET", a.URL+"/admin/v1/keys", "", nil); code != 200 {
		t.Errorf("the second session: %d, want 200", code)
	}
	if code, _ := call(t, third, "GET", b.URL+"/admin/v1/keys", "", nil); code != 200 {
		t.Errorf("the third session: %d, want 200", code)
	}
	if keys, _ := rc.Keys(ctx, "ct:console:session:*").Result(); len(keys) != 2 {
		t.Errorf("%d session keys with max_sessions 2", len(keys))
	}
}
