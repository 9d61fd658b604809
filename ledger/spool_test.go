package ledger

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"
)

// FuzzReadFrames: the spool reader never panics and never hands on more than the
// frames hold, whatever the file holds (a torn write, a foreign file).
func FuzzReadFrames(f *testing.F) {
	s := &spool{path: filepath.Join(f.TempDir(), "spool"), max: 1 << 20}
	if err := s.open(); err != nil {
		f.Fatal(err)
	}
	batch := []Record{{Time: time.Unix(1, 0), RequestID: "r", Key: "k", Status: 200, PromptTokens: 3}}
	if err := s.add(batch); err != nil {
		f.Fatal(err)
	}
	if err := s.add(batch); err != nil {
		f.Fatal(err)
	}
	if err := s.close(); err != nil {
		f.Fatal(err)
	}
	var seed bytes.Buffer
	if err := s.open(); err != nil {
		f.Fatal(err)
	}
	if _, err := seed.ReadFrom(s.f); err != nil {
		f.Fatal(err)
	}
	_ = s.close()
	f.Add(seed.Bytes())
	f.Add(seed.Bytes()[:seed.Len()-3]) // a torn last frame
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		err := readFrames(bytes.NewReader(data), func(b []Record) error { n += len(b); return nil })
		if err == nil && len(data) == 0 && n != 0 {
			t.Fatal("records from an empty file")
		}
	})
}

func TestSpool_TornFrameKeepsWholeOnes(t *testing.T) {
	s := &spool{path: filepath.Join(t.TempDir(), "spool"), max: 1 << 20}
	if err := s.open(); err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if err := s.add([]Record{{RequestID: "a"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.f.Write([]byte{0, 0, 1, 0, 9}); err != nil { // a torn frame
		t.Fatal(err)
	}
	s.size += 5
	var got []string
	err := s.drain(func(b []Record) error {
		for _, r := range b {
			got = append(got, r.RequestID)
		}
		return nil
	})
	if err != errCorrupt || len(got) != 1 || got[0] != "a" || !s.empty() {
		t.Errorf("drain: %v, %v, empty %v", got, err, s.empty())
	}
	small := &spool{path: filepath.Join(t.TempDir(), "small"), max: 10}
	if err := small.open(); err != nil {
		t.Fatal(err)
	}
	defer small.close()
	if err := small.add([]Record{{RequestID: "a"}}); err != errSpoolFull {
		t.Errorf("add over the bound: %v, want errSpoolFull", err)
	}
}
