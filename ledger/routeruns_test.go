package ledger

import (
	"reflect"
	"testing"
)

// TestSameRoutes: a record is in its predecessor's run when each of its route's seven
// texts is the same, and not when any one of them differs (or it is the first).
func TestSameRoutes(t *testing.T) {
	base := Record{Key: "k", Team: "t", API: "chat", Model: "m", Served: "s", Backend: "b", Deployment: "b/m",
		Status: 200, PromptTokens: 1}
	change := map[string]func(r *Record){
		"key": func(r *Record) { r.Key = "k2" }, "team": func(r *Record) { r.Team = "" },
		"api": func(r *Record) { r.API = "messages" }, "model": func(r *Record) { r.Model = "m2" },
		"served": func(r *Record) { r.Served = "" }, "backend": func(r *Record) { r.Backend = "c" },
		"deployment": func(r *Record) { r.Deployment = "b/n" },
	}
	for name, f := range change {
		other := base
		f(&other)
		// Fields outside the route's texts do not part a run.
		same := base
		same.Status, same.PromptTokens, same.RequestID = 429, 7, "x"
		got := sameRoutes([]Record{base, same, other, other, base}, []bool{true})
		if want := []bool{false, true, false, true, false}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s changed: %v, want %v", name, got, want)
		}
	}
}
