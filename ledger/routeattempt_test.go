package ledger

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// asRouteAttempt returns r with its one attempt given as a RouteAttempt, as the proxy
// fills a record whose one attempt was its route's.
func asRouteAttempt(r Record) Record {
	r.RouteAttempt, r.RouteAttemptDuration, r.Attempts = true, r.Attempts[0].Duration, nil
	return r
}

// TestRecord_RouteAttemptStoresAsItsAttempt: a record whose one attempt is given as its
// RouteAttempt is stored, by every writer, as the record with that attempt in Attempts:
// the same form 9 batch bytes, PostgreSQL COPY row and statement values; and the spool
// keeps it.
func TestRecord_RouteAttemptStoresAsItsAttempt(t *testing.T) {
	at := time.Date(2026, 12, 8, 1, 0, 0, 0, time.UTC)
	recs := gatewayRun(40, at)
	// Not the route's in a way the form 9 encoder tells apart: then the attempt is stored
	// as an array, which the RouteAttempt must give the same way.
	recs[7].Attempts[0].Duration = 0
	recs[9].Status, recs[9].ErrorType = 502, "api_error"
	recs[9].Attempts[0].Status, recs[9].Attempts[0].ErrorType = 502, "api_error"
	recs[11].PromptTokens, recs[11].Attempts[0].PromptTokens = 0, 0
	given := make([]Record, len(recs))
	for i := range recs {
		given[i] = asRouteAttempt(recs[i])
	}
	var e batchEncoder
	base := at.UnixMicro()
	if got, want := e.appendBatch(nil, given, nil, base), e.appendBatch(nil, recs, nil, base); string(got) != string(want) {
		t.Errorf("form 9:\n got %s\nwant %s", got, want)
	}
	for i := range recs {
		got, err := appendCopyRecord(nil, &given[i])
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := appendCopyRecord(nil, &recs[i]); string(got) != string(want) {
			t.Errorf("record %d, COPY row:\n got %q\nwant %q", i, got, want)
		}
		if got, want := insertArgs(nil, &given[i]), insertArgs(nil, &recs[i]); !reflect.DeepEqual(got, want) {
			t.Errorf("record %d, statement values:\n got %v\nwant %v", i, got, want)
		}
	}
	s := &spool{path: filepath.Join(t.TempDir(), "spool"), max: 1 << 20}
	if err := s.open(); err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if err := s.add(given); err != nil {
		t.Fatal(err)
	}
	var back []Record
	if err := s.drain(func(b []Record) error { back = append(back, b...); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(back) != len(given) || !back[3].RouteAttempt || back[3].RouteAttemptDuration != given[3].RouteAttemptDuration {
		t.Errorf("spooled: %d records, the fourth's route attempt %t %v; want %d, true %v", len(back), len(back) > 3 && back[3].RouteAttempt,
			back[min(3, len(back)-1)].RouteAttemptDuration, len(given), given[3].RouteAttemptDuration)
	}
}
