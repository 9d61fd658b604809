package responsestore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agate-gateway/agate/limits/redistest"
	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
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
