package ledger

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

func TestScratchOverview1M(t *testing.T) {
	path := os.Getenv("SCRATCH_DB")
	if path == "" {
		t.Skip()
	}
	ctx := context.Background()
	_, statErr := os.Stat(path)
	st, err := openStore(ctx, "sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.db.Close()
	n := 1000000
	end := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	start := end.Add(-30 * 24 * time.Hour)
	if statErr != nil {
		step := 30 * 24 * time.Hour / time.Duration(n)
		rng := rand.New(rand.NewPCG(1, 2))
		batch := make([]Record, 0, 2000)
		for i := range n {
			k := rng.IntN(200)
			batch = append(batch, Record{Time: start.Add(time.Duration(i) * step), RequestID: fmt.Sprintf("req_%024x", i),
				Key: "key-" + strconv.Itoa(k), Team: "team-" + strconv.Itoa(k%20), API: "chat",
				Model: "model-" + strconv.Itoa(rng.IntN(10)), Served: "model-" + strconv.Itoa(rng.IntN(10)), Backend: "openai",
				Stream: i%2 == 0, Status: []int{200, 200, 200, 200, 200, 200, 200, 200, 429, 502}[rng.IntN(10)],
				PromptTokens: int64(rng.IntN(20000)), CachedReadTokens: int64(rng.IntN(5000)), CompletionTokens: int64(rng.IntN(2000)),
				CostUSD: rng.Float64() / 100, Total: time.Duration(rng.IntN(30000)) * time.Millisecond,
				FirstToken: time.Duration(rng.IntN(2000)) * time.Millisecond, Upstream: time.Duration(rng.IntN(30000)) * time.Millisecond})
			if len(batch) == cap(batch) || i == n-1 {
				if err := st.insert(ctx, batch); err != nil {
					t.Fatal(err)
				}
				batch = batch[:0]
			}
		}
	}
	overviewVolume(ctx, t, st, "sqlite", end, n)
}
