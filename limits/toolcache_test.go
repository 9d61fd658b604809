package limits

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/limits/redistest"
	"github.com/agate-gateway/agate/tools"
)

func TestToolCache_SharedSecondLevel(t *testing.T) {
	srv := redistest.Start(t)
	var errs countingObserver
	newCache := func() *ToolCache {
		l := newRedis(t, srv, RedisOptions{})
		return &ToolCache{L1: tools.NewLRUCache(10, time.Minute, nil), Client: l.Client(), Prefix: "c:",
			TTL: time.Minute, Timeout: 100 * time.Millisecond, Errors: &errs}
	}
	one, two := newCache(), newCache()
	want := tools.Result{Content: "sunny, 21°C"}
	one.Add("alice\x00weather\x00{\"city\":\"Paris\"}", want)
	one.Add("alice\x00weather\x00{\"city\":\"Oslo\"}", tools.Result{Content: "failed", IsError: true})

	got, ok := two.Get("alice\x00weather\x00{\"city\":\"Paris\"}")
	if !ok || cmp.Diff(want, got) != "" {
		t.Fatalf("replica two Get = %+v, %v; want %+v", got, ok, want)
	}
	if _, ok := two.L1.Get("alice\x00weather\x00{\"city\":\"Paris\"}"); !ok {
		t.Error("a second-level hit was not copied into the first level")
	}
	if _, ok := two.Get("alice\x00weather\x00{\"city\":\"Oslo\"}"); ok {
		t.Error("an error result was shared")
	}
	if _, ok := two.Get("bob\x00weather\x00{\"city\":\"Paris\"}"); ok {
		t.Error("another cache key hit")
	}
	if n := errs.n.Load(); n != 0 {
		t.Errorf("%d state errors on a healthy Redis", n)
	}

	srv.Kill()
	if _, ok := two.Get("alice\x00weather\x00{\"city\":\"Lima\"}"); ok {
		t.Error("hit with Redis down")
	}
	two.Add("k", want) // reported, not fatal
	if got, ok := two.Get("k"); !ok || got != want {
		t.Errorf("the first level does not work with Redis down: %+v, %v", got, ok)
	}
	if n := errs.n.Load(); n < 2 {
		t.Errorf("%d state errors with Redis down, want at least 2", n)
	}
}
