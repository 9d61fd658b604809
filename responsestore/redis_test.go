package responsestore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/agate-gateway/agate/limits/redistest"
)

// TestRedis runs the Store contract against a real redis-server, with two Redis stores
// standing for two replicas: what one stores the other finds, for its key only.
func TestRedis(t *testing.T) {
	srv := redistest.Start(t)
	opts, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opts)
	t.Cleanup(func() { client.Close() })
	a := &Redis{Client: client, Prefix: "agate:"}
	b := &Redis{Client: redis.NewClient(opts), Prefix: "agate:"}
	t.Cleanup(func() { b.Client.Close() })
	ctx := context.Background()

	rec := &Record{Key: "alice", Response: []byte(`{"id":"resp_1"}`), Input: []byte(`[]`), Output: []byte(`[{"type":"message"}]`), Upstream: "r"}
	if err := a.Put(ctx, "resp_1", rec); err != nil {
		t.Fatal(err)
	}
	got, err := b.Get(ctx, "alice", "resp_1")
	if err != nil {
		t.Fatalf("the other replica: %v", err)
	}
	if diff := cmp.Diff(rec, got); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	for _, tt := range []struct {
		name, key, id string
		want          error
	}{
		{"another key", "bob", "resp_1", ErrNotFound},
		{"unknown id", "alice", "resp_2", ErrNotFound},
	} {
		if _, err := b.Get(ctx, tt.key, tt.id); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	if err := b.Delete(ctx, "bob", "resp_1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("delete by another key: %v", err)
	}

	// An expired record (its hash gone, as Redis expires it) is told apart from an
	// unknown one, for its owner only.
	if err := client.Del(ctx, "agate:rs:resp_1").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "alice", "resp_1"); !errors.Is(err, ErrExpired) {
		t.Errorf("expired, owner: %v", err)
	}
	if _, err := b.Get(ctx, "bob", "resp_1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("expired, another key: %v", err)
	}

	if err := a.Put(ctx, "resp_3", rec); err != nil {
		t.Fatal(err)
	}
	if ttl := client.TTL(ctx, "agate:rs:resp_3").Val(); ttl <= 0 || ttl > 24*time.Hour {
		t.Errorf("record ttl %v, want the default 24h", ttl)
	}
	if err := b.Delete(ctx, "alice", "resp_3"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := a.Get(ctx, "alice", "resp_3"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after delete: %v", err)
	}
}

// newRedisStore returns a Redis store on a fresh redis-server, and its client.
func newRedisStore(t *testing.T, maxEntries int, maxBytes int64) (*Redis, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	opts, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opts)
	t.Cleanup(func() { client.Close() })
	return &Redis{Client: client, Prefix: "agate:", MaxEntries: maxEntries, MaxBytes: maxBytes}, client
}

// TestRedis_IDNeverTakenOver: a Put under an id another key holds, held it until it
// expired, or deleted it, is ErrIDTaken and leaves the owner's record as it was; the owner
// may replace her own.
func TestRedis_IDNeverTakenOver(t *testing.T) {
	s, client := newRedisStore(t, 0, 0)
	ctx := context.Background()
	alice := &Record{Key: "alice", Response: []byte(`{"id":"resp_1","owner":"alice"}`), Input: []byte(`[]`), Output: []byte(`[]`), Upstream: "r"}
	bob := &Record{Key: "bob", Response: []byte(`{"id":"resp_1","owner":"bob"}`), Input: []byte(`[]`), Output: []byte(`[]`), Upstream: "r"}
	if err := s.Put(ctx, "resp_1", alice); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "resp_1", bob); !errors.Is(err, ErrIDTaken) {
		t.Fatalf("bob's put over alice's record: %v, want ErrIDTaken", err)
	}
	if got, err := s.Get(ctx, "alice", "resp_1"); err != nil || string(got.Response) != string(alice.Response) {
		t.Fatalf("alice's record after bob's put: %v %q", err, got.Response)
	}
	if _, err := s.Get(ctx, "bob", "resp_1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob reads the id: %v", err)
	}
	again := &Record{Key: "alice", Response: []byte(`{"id":"resp_1","v":2}`), Overlong: true}
	if err := s.Put(ctx, "resp_1", again); err != nil {
		t.Fatalf("alice replacing her own: %v", err)
	}
	if got, err := s.Get(ctx, "alice", "resp_1"); err != nil || !cmp.Equal(got, &Record{Key: "alice", Response: again.Response, Input: []byte{}, Output: []byte{}, Overlong: true}) {
		t.Errorf("alice's second record: %v %+v", err, got)
	}
	// Expired (its hash gone, as Redis expires it): still alice's.
	if err := client.Del(ctx, "agate:rs:resp_1").Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "resp_1", bob); !errors.Is(err, ErrIDTaken) {
		t.Errorf("bob's put over alice's expired id: %v", err)
	}
	// Deleted by alice: still alice's, and not found rather than expired.
	if err := s.Put(ctx, "resp_2", alice); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "alice", "resp_2"); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "resp_2", bob); !errors.Is(err, ErrIDTaken) {
		t.Errorf("bob's put over alice's deleted id: %v", err)
	}
	if _, err := s.Get(ctx, "alice", "resp_2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("alice's deleted id: %v, want ErrNotFound", err)
	}
	if err := s.Put(ctx, "resp_2", alice); err != nil {
		t.Errorf("alice storing again under her deleted id: %v", err)
	}
}

// TestRedis_Bounds: the store holds at most MaxEntries records and MaxBytes bytes, the
// oldest dropped first (their ids then expired for their owner); a record over MaxBytes is
// not stored; records Redis expired leave the count.
func TestRedis_Bounds(t *testing.T) {
	ctx := context.Background()
	put := func(t *testing.T, s *Redis, id string, n int) {
		t.Helper()
		if err := s.Put(ctx, id, &Record{Key: "alice", Response: []byte(strings.Repeat("x", n))}); err != nil {
			t.Fatal(err)
		}
	}
	held := func(s *Redis, ids ...string) string {
		var b strings.Builder
		for _, id := range ids {
			if _, err := s.Get(ctx, "alice", id); err == nil {
				b.WriteString(id + " ")
			}
		}
		return b.String()
	}
	t.Run("entries", func(t *testing.T) {
		s, client := newRedisStore(t, 3, 0)
		for _, id := range []string{"1", "2", "3", "4", "5"} {
			put(t, s, id, 10)
		}
		if got := held(s, "1", "2", "3", "4", "5"); got != "3 4 5 " {
			t.Errorf("held %q, want the three newest", got)
		}
		if _, err := s.Get(ctx, "alice", "1"); !errors.Is(err, ErrExpired) {
			t.Errorf("an evicted id: %v, want ErrExpired", err)
		}
		// A record Redis expired leaves room without evicting another.
		if err := client.Del(ctx, "agate:rs:3").Err(); err != nil {
			t.Fatal(err)
		}
		client.ZAdd(ctx, "agate:rsi", redis.Z{Score: 0, Member: "3"}) // stored long ago
		put(t, s, "6", 10)
		if got := held(s, "3", "4", "5", "6"); got != "4 5 6 " {
			t.Errorf("held %q after an expiry", got)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		s, client := newRedisStore(t, 0, 1000)
		for _, id := range []string{"1", "2", "3", "4"} {
			put(t, s, id, 300) // 300 + 64 + len("alice") + len(id) = 370 bytes each
		}
		if got := held(s, "1", "2", "3", "4"); got != "3 4 " {
			t.Errorf("held %q, want the two newest", got)
		}
		put(t, s, "big", 2000)
		if _, err := s.Get(ctx, "alice", "big"); !errors.Is(err, ErrNotFound) {
			t.Errorf("a record over the bound: %v, want ErrNotFound", err)
		}
		if total, _ := client.Get(ctx, "agate:rsb").Int64(); total != 740 {
			t.Errorf("total %d, want 740", total)
		}
		if err := s.Delete(ctx, "alice", "4"); err != nil {
			t.Fatal(err)
		}
		if total, _ := client.Get(ctx, "agate:rsb").Int64(); total != 370 {
			t.Errorf("total after a delete %d, want 370", total)
		}
	})
}
