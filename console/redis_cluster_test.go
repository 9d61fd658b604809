package console

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestRedisSessions_OneHashSlot: every key the sessions use, for the prefixes an operator
// would configure, is in the hash slot of the index (CRC16 of the hash tag, as Redis
// Cluster computes it), so the sign-in script never spans slots.
func TestRedisSessions_OneHashSlot(t *testing.T) {
	for _, prefix := range []string{"agate:", "", "ct:", "{agate}:", "team-a:{shard7}:", "a}b:"} {
		s := &redisSessions{r: Redis{Prefix: prefix}}
		want := keySlot(s.index())
		for _, k := range []string{s.keyPrefix() + name("a"), s.keyPrefix() + name("b"), s.keyPrefix() + name(strings.Repeat("x", 128))} {
			if got := keySlot(k); got != want {
				t.Errorf("prefix %q: %s is in slot %d, the index %s in %d", prefix, k, got, s.index(), want)
			}
		}
	}
	// The slot computation itself, against Redis's documented examples (CLUSTER KEYSLOT).
	for key, slot := range map[string]int{"somekey": 11058, "foo{hash_tag}": 2515, "bar{hash_tag}": 2515, "{}x": keySlotCRC("{}x")} {
		if got := keySlot(key); got != slot {
			t.Errorf("keySlot(%q) = %d, want %d", key, got, slot)
		}
	}
}

// keySlot is the Redis Cluster hash slot of key (the cluster specification's algorithm:
// the CRC16 of the hash tag, the text between the first "{" and the first "}" after it
// when that is not empty, else of the whole key, modulo 16384).
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return keySlotCRC(key)
}

// keySlotCRC is CRC16-CCITT (XMODEM) of s modulo 16384.
func keySlotCRC(s string) int {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

// TestRedisSessions_Cluster: on a real three-node Redis Cluster (loopback, slots split
// three ways) through a cluster client, sessions open, read, bound to max and end as on
// one server; the node agrees with keySlot on every key's slot.
func TestRedisSessions_Cluster(t *testing.T) {
	addrs := startCluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { c.Close() })
	now := time.Now()
	s := newRedisSessions(&Redis{Client: c, Prefix: "agate:"}, 2, 10*time.Minute, func() time.Time { return now })
	ctx := context.Background()
	for _, k := range []string{s.index(), s.keyPrefix() + name("x")} {
		if got, err := c.ClusterKeySlot(ctx, k).Result(); err != nil || int(got) != keySlot(k) {
			t.Errorf("CLUSTER KEYSLOT %s = %d, %v; keySlot says %d", k, got, err, keySlot(k))
		}
	}
	var ids []string
	for i := range 3 { // max 2: the first is dropped at the third sign-in
		now = now.Add(time.Millisecond)
		id, _, err := s.open("ops" + strconv.Itoa(i))
		if err != nil {
			t.Fatalf("sign-in %d on the cluster: %v", i, err)
		}
		ids = append(ids, id)
	}
	if _, ok := s.get(ids[0]); ok {
		t.Error("the first of three sessions (max 2) is still there")
	}
	for _, id := range ids[1:] {
		if v, ok := s.get(id); !ok || !strings.HasPrefix(v.actor, "ops") {
			t.Errorf("session %q: %+v, %v", id, v, ok)
		}
	}
	if n := s.len(); n != 2 {
		t.Errorf("%d sessions indexed, want 2", n)
	}
	s.end(ids[2])
	if _, ok := s.get(ids[2]); ok || s.len() != 1 {
		t.Errorf("after sign-out: still there %v, %d indexed", ok, s.len())
	}
}

// startCluster starts three redis-server nodes in cluster mode on loopback, gives each a
// third of the slots and joins them; it skips t without redis-server (fails under
// CI=true). The nodes are killed when t ends.
func startCluster(t *testing.T) []string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server is not installed (CI=true): %v", err)
		}
		t.Skip("redis-server is not installed: skipping the Redis Cluster test (apt-get install redis-server)")
	}
	dir := t.TempDir()
	ctx := context.Background()
	var addrs []string
	var nodes []*redis.Client
	for i := range 3 {
		port := clusterPort(t)
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--cluster-enabled", "yes", "--cluster-config-file", fmt.Sprintf("nodes-%d.conf", i), "--dir", dir, "--loglevel", "warning")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		addr := "127.0.0.1:" + strconv.Itoa(port)
		n := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { n.Close() })
		waitFor(t, "node "+addr, func() bool { return n.Ping(ctx).Err() == nil })
		addrs, nodes = append(addrs, addr), append(nodes, n)
	}
	for i, n := range nodes {
		lo, hi := i*16384/3, (i+1)*16384/3-1
		if err := n.ClusterAddSlotsRange(ctx, lo, hi).Err(); err != nil {
			t.Fatalf("CLUSTER ADDSLOTSRANGE %d %d: %v", lo, hi, err)
		}
		if i > 0 {
			host, port, _ := net.SplitHostPort(addrs[i])
			if err := nodes[0].ClusterMeet(ctx, host, port).Err(); err != nil {
				t.Fatalf("CLUSTER MEET: %v", err)
			}
		}
	}
	waitFor(t, "cluster_state:ok on every node", func() bool {
		for _, n := range nodes {
			if info, err := n.ClusterInfo(ctx).Result(); err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:3") {
				return false
			}
		}
		return true
	})
	return addrs
}

// clusterPort is a free loopback port whose cluster bus port (+10000) is free too.
func clusterPort(t *testing.T) int {
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if p+10000 > 65535 {
			continue
		}
		if bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000)); err == nil {
			bus.Close()
			return p
		}
	}
}

// waitFor polls ok (readiness, not timing) for up to 10 seconds.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: timed out", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
