package breaker

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// shared is a Set's link to the other replicas through Redis (package doc).
type shared struct {
	set     *Set
	client  redis.UniversalClient
	prefix  string
	channel string
	timeout time.Duration
	errs    func(op string, err error)

	ps     *redis.PubSub
	cancel context.CancelFunc
	done   sync.WaitGroup
}

func newShared(s *Set, o Options) *shared {
	sh := &shared{set: s, client: o.Redis, prefix: o.Prefix, channel: o.Prefix + "circuit", timeout: o.Timeout, errs: o.Errors}
	if sh.timeout <= 0 {
		sh.timeout = time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	sh.cancel = cancel
	sh.ps = o.Redis.Subscribe(ctx, sh.channel)
	sh.done.Add(1)
	go sh.listen(sh.ps.ChannelWithSubscriptions())
	return sh
}

func (sh *shared) close() {
	sh.cancel()
	_ = sh.ps.Close()
	sh.done.Wait()
}

func (sh *shared) fail(op string, err error) {
	if sh.errs != nil && err != nil {
		sh.errs(op, err)
	}
}

// listen applies the other replicas' messages, and reads the open circuits at every
// (re)subscription, until the subscription closes.
func (sh *shared) listen(ch <-chan any) {
	defer sh.done.Done()
	for m := range ch {
		switch m := m.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				sh.resync()
			}
		case *redis.Message:
			sh.receive(m.Payload)
		}
	}
}

// receive applies one message: "open <until-ms> <key>" or "closed 0 <key>". Messages
// naming keys the Set does not have are ignored.
func (sh *shared) receive(payload string) {
	verb, rest, ok1 := strings.Cut(payload, " ")
	ms, key, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 {
		return
	}
	switch verb {
	case "open":
		n, err := strconv.ParseInt(ms, 10, 64)
		if err == nil {
			sh.set.apply(key, true, time.UnixMilli(n))
		}
	case "closed":
		sh.set.apply(key, false, time.Time{})
	}
}

func (sh *shared) openKey(key string) string  { return sh.prefix + "circuit:" + key }
func (sh *shared) probeKey(key string) string { return sh.prefix + "circuit-probe:" + key }

// resync opens the circuits other replicas hold open (their keys in Redis).
func (sh *shared) resync() {
	keys := sh.set.keys()
	if len(keys) == 0 {
		return
	}
	rk := make([]string, len(keys))
	for i, k := range keys {
		rk[i] = sh.openKey(k)
	}
	ctx, cancel := ctxFor(sh.timeout)
	defer cancel()
	vals, err := sh.client.MGet(ctx, rk...).Result()
	if err != nil {
		sh.fail("circuit_sync", err)
		return
	}
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			sh.set.apply(keys[i], true, time.UnixMilli(n))
		}
	}
}

// publish tells the other replicas of a transition this replica made: an opening (stored
// until its end, and published), or a closing (deleted, and published).
func (sh *shared) publish(t Transition, now time.Time) {
	ctx, cancel := ctxFor(sh.timeout)
	defer cancel()
	var msg string
	pipe := sh.client.Pipeline()
	switch t.To {
	case Open:
		ms := strconv.FormatInt(t.Until.UnixMilli(), 10)
		pipe.Set(ctx, sh.openKey(t.Key), ms, max(t.Until.Sub(now), time.Millisecond))
		pipe.Del(ctx, sh.probeKey(t.Key))
		msg = "open " + ms + " " + t.Key
	case Closed:
		pipe.Del(ctx, sh.openKey(t.Key), sh.probeKey(t.Key))
		msg = "closed 0 " + t.Key
	default:
		return
	}
	pipe.Publish(ctx, sh.channel, msg)
	_, err := pipe.Exec(ctx)
	sh.fail("circuit_publish", err)
}

// claim reports whether this replica may probe key: it set the probe's lease (SET NX for
// one cooldown), or Redis did not answer (each replica then probes on its own).
func (sh *shared) claim(key string, lease time.Duration) bool {
	ctx, cancel := ctxFor(sh.timeout)
	defer cancel()
	ok, err := sh.client.SetNX(ctx, sh.probeKey(key), "1", lease).Result()
	if err != nil {
		sh.fail("circuit_probe", err)
		return true
	}
	return ok
}
