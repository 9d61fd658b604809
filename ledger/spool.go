package ledger

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// spool is a bounded local file of the batches the database could not take, each a
// frame: a 4-byte big-endian length, then the batch as gob. Only the writer goroutine
// uses it (mu guards against Close racing it).
type spool struct {
	path string
	max  int64
	mu   sync.Mutex
	f    *os.File
	size int64
}

// maxFrame bounds one frame read back: a batch larger than any writer writes is
// corruption.
const maxFrame = 256 << 20

func (s *spool) open() error {
	f, err := os.OpenFile(s.path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("ledger: opening the spool file: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("ledger: opening the spool file: %w", err)
	}
	s.f, s.size = f, st.Size()
	return nil
}

func (s *spool) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f.Close()
}

func (s *spool) empty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.size == 0
}

// errSpoolFull is add's error when the batch would take the file past its bound.
var errSpoolFull = errors.New("ledger: the spool file is full")

// add appends batch as one frame.
func (s *spool) add(batch []Record) error {
	var b bytes.Buffer
	b.Write([]byte{0, 0, 0, 0})
	if err := gob.NewEncoder(&b).Encode(batch); err != nil {
		return err
	}
	frame := b.Bytes()
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.size+int64(len(frame)) > s.max {
		return errSpoolFull
	}
	if _, err := s.f.Write(frame); err != nil {
		return err
	}
	s.size += int64(len(frame))
	return nil
}

// drain hands every spooled batch to write, in order, and empties the file once all
// were written. On a write's error the file is kept whole: batches written before it are
// then written again at the next drain (the ledger is at least once across a database
// outage; a record's request_id tells repeats apart).
func (s *spool) drain(write func([]Record) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	err := readFrames(bufio.NewReader(s.f), write)
	if err != nil && !errors.Is(err, errCorrupt) {
		return err
	}
	// Written, or unreadable past a point (a torn last frame): start over either way.
	if terr := s.f.Truncate(0); terr != nil {
		return terr
	}
	s.size = 0
	return err
}

// errCorrupt is readFrames' error for a frame that does not decode.
var errCorrupt = errors.New("ledger: the spool file is corrupt past this point")

// readFrames decodes the frames of r, handing each batch to fn.
func readFrames(r io.Reader, fn func([]Record) error) error {
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			return errCorrupt
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n == 0 || n > maxFrame {
			return errCorrupt
		}
		var batch []Record
		if err := gob.NewDecoder(io.LimitReader(r, int64(n))).Decode(&batch); err != nil {
			return errCorrupt
		}
		if err := fn(batch); err != nil {
			return err
		}
	}
}
